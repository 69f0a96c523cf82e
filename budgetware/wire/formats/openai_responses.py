"""OpenAI Responses: tool output items in ``input``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from budgetware.wire.formats.base import Batch, Found, JsonPath, collect_text_parts, text_of

__all__ = ["FORMAT", "OpenAIResponses"]

# Items that carry the output of a call the model made in an earlier item.
_OUTPUTS = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "local_shell_call_output",
        "shell_call_output",
    }
)
# The call item each output answers, for the tool name.
_CALLS = frozenset({"function_call", "custom_tool_call"})
_FIXED_NAMES = {"local_shell_call_output": "local_shell", "shell_call_output": "shell"}


def _input_text(part: Mapping[str, Any]) -> str | None:
    return "text" if part.get("type") in ("input_text", "output_text") else None


class OpenAIResponses:
    """``POST .../responses`` (and ``/input_tokens``, ``/compact``): a batch is the outputs
    of one model turn, ending at a message or a model item after an output (so a later
    turn never changes earlier previews)."""

    name = "openai_responses"
    sniff_markers: tuple[bytes, ...] = (b'_output"', b'"mcp_call"')

    def match_path(self, path: str) -> bool:
        return path.endswith(("/responses", "/responses/input_tokens", "/responses/compact"))

    def match_body(self, body: Mapping[str, Any]) -> bool:
        items = body.get("input")
        return isinstance(items, list) and any(
            isinstance(i, dict) and (i.get("type") in _OUTPUTS or i.get("type") == "mcp_call")
            for i in items
        )

    def batches(self, body: Mapping[str, Any]) -> list[Batch]:
        items = body.get("input")
        if not isinstance(items, list):
            return []
        names: dict[str, str] = {}
        batches: list[Batch] = []
        batch: Batch = []
        seen_output = False

        def close() -> None:
            nonlocal batch, seen_output
            if any(found.slots for found in batch):
                batches.append(batch)
            batch, seen_output = [], False

        for index, item in enumerate(items):
            if not isinstance(item, dict):
                close()
                continue
            kind = item.get("type")
            if kind in _OUTPUTS:
                batch.append(self._output(item, ("input", index), kind, names))
                seen_output = True
                continue
            if kind == "message" or (kind is None and "role" in item):
                close()
                continue
            # Anything else was produced by the model: a new turn once outputs were seen.
            if seen_output:
                close()
            if kind in _CALLS:
                call_id, name = text_of(item.get("call_id")), text_of(item.get("name"))
                if call_id is not None and name is not None:
                    names[call_id] = name
            elif kind == "mcp_call":
                batch.append(self._mcp_call(item, ("input", index)))
        close()
        return batches

    @staticmethod
    def _output(
        item: Mapping[str, Any], path: JsonPath, kind: str, names: Mapping[str, str]
    ) -> Found:
        call_id = text_of(item.get("call_id")) or text_of(item.get("id"))
        name = _FIXED_NAMES.get(kind) or names.get(call_id or "")
        found = Found(call_id=call_id, tool_name=name)
        output = item.get("output")
        if kind == "shell_call_output" and isinstance(output, list):
            for position, chunk in enumerate(output):
                if not isinstance(chunk, dict):
                    found.parts.append(chunk)
                    continue
                for key, value in chunk.items():
                    if key in ("stdout", "stderr") and isinstance(value, str):
                        found.slot((*path, "output", position, key), value)
                    else:
                        found.parts.append(value)
            return found
        collect_text_parts(found, output, (*path, "output"), is_text=_input_text)
        return found

    @staticmethod
    def _mcp_call(item: Mapping[str, Any], path: JsonPath) -> Found:
        found = Found(call_id=text_of(item.get("id")), tool_name=text_of(item.get("name")))
        output, error = item.get("output"), item.get("error")
        if isinstance(output, str):
            found.slot((*path, "output"), output)
        if isinstance(error, str):
            found.slot((*path, "error"), error)
        elif isinstance(error, dict) and isinstance(error.get("message"), str):
            found.slot((*path, "error", "message"), error["message"])
        elif error is not None:
            found.parts.append(error)
        return found


FORMAT = OpenAIResponses()
