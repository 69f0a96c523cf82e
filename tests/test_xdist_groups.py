"""scripts/test runs pytest-xdist with ``--dist loadgroup``: the tests of one
``xdist_group`` (the LiteLLM proxy tests, which share proxies started once) must run on one
worker. tests/xdist_groups.py keeps that true under pytest 9.2."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("xdist")

GROUPED = """
import pytest

pytestmark = [pytest.mark.xdist_group("together")]

@pytest.mark.parametrize("i", range(4))
def test_grouped(i):
    pass
"""
UNGROUPED = """
import pytest

@pytest.mark.parametrize("i", range(4))
def test_alone(i):
    pass
"""


def test_the_tests_of_one_group_run_on_one_worker(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest((Path(__file__).parent / "xdist_groups.py").read_text())
    pytester.makepyfile(test_a=GROUPED, test_b=GROUPED, test_c=UNGROUPED)
    # xdist alone: the other installed plugins (hypothesis, langsmith, budgetware's, ...)
    # have nothing to do with grouping, and three interpreters would each import them.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest_subprocess(
        "-p", "xdist", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=12)
    ran = re.findall(r"\[(gw\d)\] .*PASSED (\S+)", result.stdout.str())
    grouped = {worker for worker, test in ran if "test_grouped" in test}
    assert len(ran) == 12
    assert len(grouped) == 1
