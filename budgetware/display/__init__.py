"""Display projection: bounded copies of tool output for editors (ACP) and log consumers
(docs/projection.md); the modules inside are private."""

from budgetware.display.headless import HeadlessWriter
from budgetware.display.projection import (
    project_acp_frame,
    project_acp_update,
    project_headless_message,
)

__all__ = ["HeadlessWriter", "project_acp_frame", "project_acp_update", "project_headless_message"]
