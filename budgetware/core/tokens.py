"""Exact token counts and cuts with tiktoken (``tokens:o200k_base``, ...); the vocabulary is
read from litellm's package or tiktoken's cache, checked, never downloaded."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import tempfile
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from budgetware.core.artifacts import text_digest

__all__ = [
    "ENCODINGS",
    "ExactTokensUnavailable",
    "check_available",
    "count",
    "cut",
]

# The exact units: "tokens:<encoding>".
ENCODINGS = ("o200k_base", "cl100k_base")
_INSTALL = 'pip install "budgetware[tokens]"'
_DOCS = "docs/previews.md#exact-token-budgets"
# Counts are cached by digest (an output is re-sent every turn); short strings are not.
_CACHE_MIN_CHARS = 256
_CACHE_MAX_ENTRIES = 65_536


class ExactTokensUnavailable(RuntimeError):
    """An exact token unit was asked for, but tiktoken or the vocabulary is missing."""


def _places() -> list[tuple[str, Path]]:
    """Where a vocabulary file may be, in the order they are read, each with its name."""
    places = []
    try:  # found without importing litellm (slow, with side effects)
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        spec = None
    for location in (spec and spec.submodule_search_locations) or ():
        places.append(("litellm's", Path(location) / "litellm_core_utils" / "tokenizers"))
    # tiktoken's cache, as tiktoken.load finds it ("" turns it off).
    cache = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR"))
    if cache is None:
        cache = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if cache:
        places.append(("tiktoken's cache", Path(cache)))
    return places


def _vocabulary(name: str, url: str, expected_hash: str | None) -> bytes:
    """The vocabulary file of ``url`` from the first place that has it whole."""
    key = hashlib.sha1(url.encode()).hexdigest()
    places = _places()
    damaged = []
    for _, folder in places:
        try:
            contents = (folder / key).read_bytes()
        except OSError:
            continue
        if expected_hash is None or hashlib.sha256(contents).hexdigest() == expected_hash:
            return contents
        damaged.append(str(folder / key))
    looked = "; ".join(f"{what} {folder}" for what, folder in places) or "nowhere"
    problem = f"a damaged copy ({', '.join(damaged)}) and no whole one" if damaged else "none"
    raise ExactTokensUnavailable(
        f"unit 'tokens:{name}' needs the {name} vocabulary file, found {problem} (looked in "
        f"{looked}): fill tiktoken's cache once where there is network, with python -c "
        f"\"import tiktoken; tiktoken.get_encoding('{name}')\", or set TIKTOKEN_CACHE_DIR to "
        f"a copy of a filled cache ({_DOCS})"
    )


def _definition(name: str, read: Callable[[bytes], Any]) -> dict[str, Any]:
    """tiktoken's definition of encoding ``name``, its vocabulary file read by ``read``."""
    try:
        import tiktoken_ext.openai_public as public
    except ImportError as exc:
        raise ExactTokensUnavailable(
            f"unit 'tokens:{name}' needs tiktoken ({exc}): {_INSTALL}"
        ) from None

    make = getattr(public, name, None)
    # Replacing load_tiktoken_bpe is enough only if the definition reads through it.
    if not isinstance(make, types.FunctionType) or "load_tiktoken_bpe" not in (
        make.__code__.co_names
    ):
        raise ExactTokensUnavailable(f"this tiktoken builds {name!r} in a way budgetware can't")

    def load(url: str, expected_hash: str | None = None) -> Any:
        return read(_vocabulary(name, url, expected_hash))

    local = types.FunctionType(
        make.__code__, {**make.__globals__, "load_tiktoken_bpe": load}, make.__name__
    )
    definition: dict[str, Any] = local()
    return definition


_AVAILABLE: set[str] = set()


def check_available(name: str) -> None:
    """Raise ``ExactTokensUnavailable`` (saying what to do) unless ``name``'s vocabulary is
    there: a unit that cannot work is refused where it is configured."""
    if name in _AVAILABLE:
        return
    if name not in ENCODINGS:
        raise ExactTokensUnavailable(
            f"unknown encoding {name!r}; exact units are "
            + ", ".join(f"tokens:{e}" for e in ENCODINGS)
        )
    read: list[bytes] = []  # the vocabulary, found whole (else ExactTokensUnavailable)
    _definition(name, read.append)
    if not read:
        raise ExactTokensUnavailable(f"this tiktoken builds {name!r} in a way budgetware can't")
    _AVAILABLE.add(name)


_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}


def _encoding(name: str) -> Any:
    with _LOCK:  # loading takes about a second: once, whichever thread asks first
        found = _LOADED.get(name)
        if found is None:
            found = _LOADED[name] = _load(name)
        return found


def _ranks(contents: bytes) -> dict[bytes, int]:
    """A ``.tiktoken`` vocabulary file parsed, as ``tiktoken.load.load_tiktoken_bpe`` does."""
    lines = (line.split() for line in contents.splitlines() if line)
    return {base64.b64decode(token): int(rank) for token, rank in lines}


def _load(name: str) -> Any:
    check_available(name)
    import tiktoken

    return tiktoken.Encoding(**_definition(name, _ranks))


_COUNTS: dict[tuple[str, bytes], int] = {}


def _encode(name: str, text: str) -> list[int]:
    tokens: list[int] = _encoding(name).encode_ordinary(text)
    return tokens


def count(text: str, name: str) -> int:
    """The number of tokens of ``text`` in the encoding ``name`` (special tokens as text)."""
    if len(text) < _CACHE_MIN_CHARS:
        return len(_encode(name, text))
    key = (name, text_digest(text))
    found = _COUNTS.get(key)
    if found is None:
        found = len(_encode(name, text))
        if len(_COUNTS) >= _CACHE_MAX_ENTRIES:
            _COUNTS.clear()
        _COUNTS[key] = found
    return found


def cut(text: str, size: int, name: str, *, from_end: bool) -> str:
    """A long prefix (or suffix) of ``text`` of at most ``size`` tokens when tokenized
    alone, of whole characters; only a window of about ``size`` tokens is tokenized."""
    if size <= 0 or not text:
        return ""
    window = min(len(text), size * 4 + 16)
    while True:
        tokens = _encode(name, text[-window:] if from_end else text[:window])
        if len(tokens) > size or window >= len(text):
            break
        window = min(len(text), window * 2)
    if len(tokens) <= size:
        return text
    encoding = _encoding(name)
    keep = size
    while keep > 0:
        # The tokens' bytes are the text's, but for a character cut at the edge: dropped.
        if from_end:
            piece = encoding.decode_bytes(tokens[-keep:]).decode("utf-8", "ignore")
            candidate = text[len(text) - len(piece) :] if piece else ""
        else:
            piece = encoding.decode_bytes(tokens[:keep]).decode("utf-8", "ignore")
            candidate = text[: len(piece)]
        over = count(candidate, name) - size  # BPE may merge differently across a cut
        if over <= 0:
            return candidate
        keep -= over
    return ""
