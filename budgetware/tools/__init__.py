"""``read_tool_output``, the model-facing tool that reads full outputs back: its declaration
for each provider API and its executor (turn on ``preview_tool_hint`` so previews name it).
The executor never raises for anything the model sent: each mistake is one line of text.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
from collections.abc import Mapping
from typing import Any, Literal

from budgetware.core.artifacts import ArtifactNotFound, ArtifactStoreError
from budgetware.core.config import BudgetConfig
from budgetware.core.errors import fail_open
from budgetware.retrieval.errors import InvalidPattern, InvalidReadArgument, SearchTimeout
from budgetware.retrieval.grep import GrepResult, grep_result
from budgetware.retrieval.read import count, read_window
from budgetware.store.base import ContentStore

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_CONTEXT",
    "MAX_LIMIT",
    "TOOL_DESCRIPTION",
    "TOOL_NAME",
    "ToolApi",
    "arun_read_tool_output",
    "read_tool_output_parameters",
    "read_tool_output_schema",
    "run_read_tool_output",
]

logger = logging.getLogger("budgetware")

TOOL_NAME = "read_tool_output"
DEFAULT_LIMIT = 20_000
# The most one call returns: an answer is itself a tool result the model reads.
MAX_LIMIT = 100_000
MAX_CONTEXT = 10
MAX_MATCHES = 100
# A matching line is shown up to this many characters (the part around the match).
LINE_CHARS = 500
SEARCH_SECONDS = 10.0

ToolApi = Literal["openai_chat", "openai_responses", "anthropic", "gemini"]
TOOL_APIS: tuple[ToolApi, ...] = ("openai_chat", "openai_responses", "anthropic", "gemini")

TOOL_DESCRIPTION = (
    "Read the full output of a tool result that was truncated. A truncated result starts "
    "with a line like '[Tool output truncated: ... Full output: <ref>]': pass that <ref>. "
    "Without pattern, returns `limit` characters from character `offset` (page on with "
    "the offset the answer names). With pattern (a regular expression, Python syntax; "
    "escape . ( [ to match them literally), returns the matching lines as "
    "'line:offset: text' instead, with `context` lines around each."
)

_PROPERTIES: dict[str, dict[str, Any]] = {
    "ref": {
        "type": "string",
        "description": "The reference after 'Full output:' in the truncated result.",
    },
    "offset": {
        "type": "integer",
        "description": "The character to start reading at (0: the beginning).",
        "minimum": 0,
    },
    "limit": {
        "type": "integer",
        "description": f"How many characters to return (default {DEFAULT_LIMIT}, "
        f"at most {MAX_LIMIT}); with pattern, the most characters of matching lines.",
        "minimum": 1,
        "maximum": MAX_LIMIT,
    },
    "pattern": {
        "type": "string",
        "description": "A regular expression: return the lines matching it, with their "
        "line numbers and character offsets, instead of a window.",
    },
    "context": {
        "type": "integer",
        "description": f"With pattern: lines to show before and after each match "
        f"(default 0, at most {MAX_CONTEXT}).",
        "minimum": 0,
        "maximum": MAX_CONTEXT,
    },
}


def read_tool_output_parameters() -> dict[str, Any]:
    """The tool's parameters as a JSON Schema object."""
    return {
        "type": "object",
        "properties": {name: dict(spec) for name, spec in _PROPERTIES.items()},
        "required": ["ref"],
        "additionalProperties": False,
    }


def read_tool_output_schema(api: ToolApi = "openai_chat") -> dict[str, Any]:
    """The declaration of ``read_tool_output`` for one provider API: an element of the
    request's ``tools`` list (``openai_chat``, ``openai_responses``, ``anthropic``), or a
    function declaration for Gemini's ``tools=[{"function_declarations": [...]}]``."""
    if api not in TOOL_APIS:
        raise ValueError(f"unknown tool API {api!r} (one of {', '.join(TOOL_APIS)})")
    named = {"name": TOOL_NAME, "description": TOOL_DESCRIPTION}
    if api == "gemini":
        # Gemini takes an OpenAPI subset: upper-case types, no additionalProperties.
        properties = {
            name: {
                "type": str(spec["type"]).upper(),
                "description": spec["description"],
                **{k: spec[k] for k in ("minimum", "maximum") if k in spec},
            }
            for name, spec in _PROPERTIES.items()
        }
        return {
            **named,
            "parameters": {"type": "OBJECT", "properties": properties, "required": ["ref"]},
        }
    if api == "anthropic":
        return {**named, "input_schema": read_tool_output_parameters()}
    function = {**named, "parameters": read_tool_output_parameters()}
    if api == "openai_chat":
        return {"type": "function", "function": function}
    # The Responses API takes a missing `strict` as strict mode (every parameter required);
    # Chat Completions is non-strict without it.
    return {"type": "function", **function, "strict": False}


def _arguments(arguments: object) -> dict[str, Any]:
    if isinstance(arguments, (str, bytes, bytearray)):
        text = (
            arguments.decode("utf-8", "replace") if not isinstance(arguments, str) else arguments
        )
        try:
            arguments = json.loads(text) if text.strip() else {}
        except ValueError:
            raise InvalidReadArgument("the arguments are not a JSON object") from None
    if not isinstance(arguments, Mapping):
        raise InvalidReadArgument("the arguments are not a JSON object")
    return dict(arguments)


def _number(args: Mapping[str, Any], name: str, default: int, minimum: int = 0) -> int:
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, str) and value.strip().lstrip("-").isascii():
        try:  # ASCII digits only ("²" is a digit to str.isdigit), and no 5,000 of them
            value = int(value.strip())
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidReadArgument(f"{name} must be a whole number")
    return count(name, value, minimum=minimum)


def run_read_tool_output(
    arguments: Mapping[str, Any] | str | bytes,
    *,
    store: ContentStore | None = None,
    config: BudgetConfig | None = None,
) -> str:
    """Run ``read_tool_output`` with the model's arguments (a dict, or the JSON string a
    provider sends) and return its answer: a first line saying what follows
    (``chars 20,000-40,000 of 432,460``, ``7 matches``), then the text. A mistake in the
    call comes back as one line starting with ``error:``, never raised.

    The store is ``store``, else the configured one (``config``, the environment).
    """
    try:
        args = _arguments(arguments)
        ref = args.get("ref")
        if not isinstance(ref, str) or not ref.strip():
            raise InvalidReadArgument("ref is required: the reference after 'Full output:'")
        # minimum=1: an empty window would page on at the same offset for ever.
        limit = min(_number(args, "limit", DEFAULT_LIMIT, minimum=1), MAX_LIMIT)
        pattern = args.get("pattern")
        if pattern is not None and pattern != "":
            if not isinstance(pattern, str):
                raise InvalidReadArgument("pattern must be a string")
            context = min(_number(args, "context", 0), MAX_CONTEXT)
            found = grep_result(
                ref,
                pattern,
                context=context,
                max_matches=MAX_MATCHES,
                max_line_chars=LINE_CHARS,
                timeout=SEARCH_SECONDS,
                store=store,
                config=config,
            )
            return _render_matches(found, limit)
        offset = _number(args, "offset", 0)
        window = read_window(ref, offset=offset, limit=limit, store=store, config=config)
        head = f"chars {window.offset:,}-{window.end:,} of {window.total:,}"
        if window.end < window.total:
            head += f"; more with offset={window.end}"
        elif not window.text:
            head += " (the end)"
        return f"{head}\n{window.text}"
    except ArtifactNotFound as exc:
        return f"error: no such full output: {exc}"
    except InvalidReadArgument as exc:  # the message is the answer
        return f"error: {exc}"
    except (InvalidPattern, ImportError) as exc:
        return "error: " + " ".join(str(exc).split())  # on one line
    except SearchTimeout:
        return (
            f"error: the search took longer than {SEARCH_SECONDS:g} s; use a simpler "
            "pattern (a plain string is fastest)"
        )
    except ArtifactStoreError as exc:
        reason = "it is not text" if exc.errno == errno.EILSEQ else "the store failed"
        return f"error: the full output cannot be read now ({reason}); try again later"
    except Exception:
        fail_open("read a full output for read_tool_output", config=config)
        return "error: the full output cannot be read now (internal error)"


async def arun_read_tool_output(
    arguments: Mapping[str, Any] | str | bytes,
    *,
    store: ContentStore | None = None,
    config: BudgetConfig | None = None,
) -> str:
    """``run_read_tool_output`` in a worker thread, for event loops."""
    return await asyncio.to_thread(run_read_tool_output, arguments, store=store, config=config)


def _render_matches(found: GrepResult, limit: int) -> str:
    """The matches with their context lines, as grep prints them, up to ``limit`` characters
    (the first group whatever its size); the head counts the matching lines written."""
    count = len(found.matches)
    lines: list[str] = []
    written: set[int] = set()  # the matching lines written
    used = 0
    last = 0  # the last line number written
    matched = {m.line_number for m in found.matches}
    for match in found.matches:
        group = [item for item in (*match.before, match, *match.after) if item.line_number > last]
        if not group:
            continue
        rendered = []
        for item in group:
            mark = ":" if item.line_number in matched else "-"
            rendered.append(f"{item.line_number}{mark}{item.offset}{mark} {item.line}")
        apart = bool(lines) and group[0].line_number > last + 1
        size = sum(len(r) + 1 for r in rendered) + (3 if apart else 0)
        if lines and used + size > limit:
            break
        if apart:
            lines.append("--")
        lines += rendered
        used += size
        written.update(item.line_number for item in group if item.line_number in matched)
        last = group[-1].line_number
    shown = len(written)
    noun = "match" if shown == 1 else "matches"
    head = f"{shown} {noun}"
    if found.more or shown < count:
        head = f"{shown} {noun} shown (more follow: narrow the pattern)"
    if shown:
        head += " (line:offset: text; read around one with its offset)"
    return "\n".join([head, *lines])
