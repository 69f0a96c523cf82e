"""The test proxy's ``custom_auth``: each key carries the metadata a proxy admin would set.

A deployment keeps keys in the proxy's database (``/key/generate``, ``/team/new``); the
callback reads the same ``UserAPIKeyAuth`` either way. Copied next to the proxy's config.
"""

from __future__ import annotations

from typing import Any

from litellm.proxy._types import UserAPIKeyAuth

MASTER_KEY = "sk-budgetware-proxy-test"

# key -> UserAPIKeyAuth fields
KEYS: dict[str, dict[str, Any]] = {
    "sk-key-8000": {"metadata": {"budgetware_batch_budget": 8000}},
    "sk-team-6000": {"team_id": "team-a", "team_metadata": {"budgetware_batch_budget": "6000"}},
    "sk-key-off": {"metadata": {"budgetware_disable": True}},
    # test_litellm_history.py's replicas: a batch and a history budget (its HISTORY).
    "sk-key-history": {
        "metadata": {"budgetware_batch_budget": 8000, "budgetware_history_budget": 12_000}
    },
    # test_litellm_history.py: the history budget of the model behind the proxy's name.
    "sk-key-history-auto": {
        "metadata": {"budgetware_batch_budget": 200_000, "budgetware_history_budget": "auto"}
    },
    "sk-key-off-team-6000": {
        "metadata": {"budgetware_disable": "true"},
        "team_id": "team-a",
        "team_metadata": {"budgetware_batch_budget": 6000},
    },
    # Metadata of the wrong type: each entry is ignored with a warning.
    "sk-bad-budget-list": {"metadata": {"budgetware_batch_budget": [8000]}},
    "sk-bad-budget-float": {"metadata": {"budgetware_batch_budget": 12.5}},
    "sk-bad-unit-number": {"metadata": {"budgetware_unit": 7}},
    "sk-bad-disable-dict": {"metadata": {"budgetware_disable": {"on": True}}},
    "sk-bad-team-budget-bool": {
        "team_id": "team-b",
        "team_metadata": {"budgetware_batch_budget": True},
    },
}


async def user_api_key_auth(request: Any, api_key: str) -> UserAPIKeyAuth:
    if api_key == MASTER_KEY:
        return UserAPIKeyAuth(api_key=api_key)
    fields = KEYS.get(api_key)
    if fields is None:
        raise ValueError("unknown key")
    return UserAPIKeyAuth(api_key=api_key, **fields)
