"""Privacy-safe boundary diagnostics: events, values per boundary, the log, the recorder.

Public (docs/diagnostics.md): ``Recorder`` and ``set_recorder``; the modules inside are
private. Importing it loads no pydantic (``budgetware diagnose`` and the layers that report
events stay light).
"""

from budgetware.diagnostics.recorder import Recorder, set_recorder

__all__ = ["Recorder", "set_recorder"]
