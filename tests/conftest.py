"""Test-wide settings: internal errors raise, artifacts stay in a temporary directory."""

from __future__ import annotations

import os
import tempfile

# Set before any test imports an SDK: litellm would otherwise fetch a price map online.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
# Under the test suite an internal error raises instead of letting the request through.
os.environ["BUDGETWARE_RAISE_ERRORS"] = "1"
# Never write artifacts into the developer's real cache directory.
os.environ["BUDGETWARE_ARTIFACT_DIR"] = tempfile.mkdtemp(prefix="budgetware-test-artifacts-")
