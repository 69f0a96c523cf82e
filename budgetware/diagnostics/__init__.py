"""Privacy-safe boundary diagnostics: events, values per boundary, the log, the recorder.

Public (docs/diagnostics.md): ``Recorder`` and ``set_recorder``, loaded on first use so
that ``budgetware diagnose`` and the layers that report events import no pydantic; the
modules inside are private.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from budgetware.diagnostics.recorder import Recorder, set_recorder

__all__ = ["Recorder", "set_recorder"]

if not TYPE_CHECKING:  # hidden from type checkers: a misspelled name stays an error

    def __getattr__(name: str) -> object:
        if name not in __all__:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from budgetware.diagnostics import recorder

        return getattr(recorder, name)


del TYPE_CHECKING
