"""``--dist loadgroup`` under pytest 9.2: every ``xdist_group`` runs on one worker again.

pytest-xdist (3.8) tells its controller a test's group by appending ``@<group>`` to the
test's node id on the worker (it sets ``item._nodeid``). pytest 9.2 keeps node ids in a
structured ``item._id``, so the suffix is lost and a group's tests are spread over every
worker, each starting the group's shared fixtures (a pair of LiteLLM proxies: some 25 s of
CPU) again (pytest-dev/pytest-xdist#1386). This hook appends the suffix where xdist's did
not take; with an xdist or pytest where it does, it changes nothing.
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):
        return  # not a loadgroup worker
    for item in items:
        names = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        suffix = "@" + "_".join(sorted(names))
        if not names or item.nodeid.endswith(suffix):
            continue
        from _pytest.nodeid import NodeId

        item._id = NodeId.parse(item.nodeid + suffix)  # type: ignore[attr-defined]
