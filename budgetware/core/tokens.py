"""Exact token counts and cuts for the OpenAI encodings (``tokens:o200k_base``, ...).

tiktoken does the counting; the vocabularies are the files the litellm package ships under
``litellm/litellm_core_utils/tokenizers/``, named as tiktoken names its cache entries (the
SHA-1 of the vocabulary's download URL). They are read from there and checked against the
SHA-256 tiktoken expects, and nothing is ever downloaded: tiktoken's own loader (which
would fetch a missing file, and copy a found one into a cache directory) is not used.
tiktoken and litellm are an extra (``budgetware[tokens]``); nothing here is imported unless
an exact unit is configured.

A count is cached by the SHA-256 of the text, so an output re-sent every turn is tokenized
once per process.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import threading
import types
from pathlib import Path
from typing import Any

from budgetware.core.artifacts import text_digest

__all__ = [
    "ENCODINGS",
    "ExactTokensUnavailable",
    "check_available",
    "count",
    "cut_prefix",
    "cut_suffix",
]

# The exact units: "tokens:<encoding>".
ENCODINGS = ("o200k_base", "cl100k_base")
_INSTALL = 'pip install "budgetware[tokens]"'
# Strings shorter than this are tokenized directly: hashing them costs about as much.
_CACHE_MIN_CHARS = 256
_CACHE_MAX_ENTRIES = 65_536


class ExactTokensUnavailable(RuntimeError):
    """An exact token unit was asked for, but tiktoken or the vocabulary is missing."""


def _find(module: str) -> Any:
    try:
        return importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None


def _vocabulary_dir() -> Path | None:
    # Found without importing litellm (importing it takes seconds and has side effects).
    spec = _find("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location) / "litellm_core_utils" / "tokenizers"
        if folder.is_dir():
            return folder
    return None


def _url_name(url: str) -> str:
    return hashlib.sha1(url.encode()).hexdigest()  # tiktoken names its cache entries so


# Where tiktoken's own definitions (tiktoken_ext.openai_public) fetch each vocabulary from:
# its file in litellm's folder is named after this URL. Checked against the definitions
# when an encoding is loaded.
_VOCABULARY_URLS = {
    name: f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    for name in ENCODINGS
}


def check_available(name: str) -> None:
    """Raise ``ExactTokensUnavailable`` (with what to install) unless ``name`` can be used."""
    if name not in ENCODINGS:
        raise ExactTokensUnavailable(
            f"unknown encoding {name!r}; exact units are "
            + ", ".join(f"tokens:{e}" for e in ENCODINGS)
        )
    if _find("tiktoken") is None:
        raise ExactTokensUnavailable(f"unit 'tokens:{name}' needs tiktoken: {_INSTALL}")
    folder = _vocabulary_dir()
    if folder is None:
        raise ExactTokensUnavailable(
            f"unit 'tokens:{name}' needs the vocabulary files the litellm package ships: "
            f"{_INSTALL}"
        )
    if not (folder / _url_name(_VOCABULARY_URLS[name])).is_file():
        raise ExactTokensUnavailable(
            f"unit 'tokens:{name}' needs the {name} vocabulary file, which this litellm "
            f"does not ship (looked in {folder}): {_INSTALL}"
        )


_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}


def _encoding(name: str) -> Any:
    found = _LOADED.get(name)
    if found is not None:
        return found
    with _LOCK:
        found = _LOADED.get(name)
        if found is None:
            found = _LOADED[name] = _load(name)
        return found


def _load(name: str) -> Any:
    check_available(name)
    import tiktoken
    import tiktoken_ext.openai_public as public

    folder = _vocabulary_dir()
    assert folder is not None
    make = getattr(public, name, None)
    # The constructor must read its vocabulary through load_tiktoken_bpe, and nothing
    # else that could reach the network: then replacing that one name is enough.
    if not isinstance(make, types.FunctionType) or "load_tiktoken_bpe" not in (
        make.__code__.co_names
    ):
        raise ExactTokensUnavailable(f"this tiktoken builds {name!r} in a way budgetware can't")

    def load_local(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        if url != _VOCABULARY_URLS[name]:  # the check at setup looked for another file
            raise ExactTokensUnavailable(f"this tiktoken reads {name!r} from elsewhere")
        path = folder / _url_name(url)
        try:
            contents = path.read_bytes()
        except OSError as exc:
            raise ExactTokensUnavailable(
                f"the {name} vocabulary is not in {folder}: {_INSTALL}"
            ) from exc
        if expected_hash is not None and hashlib.sha256(contents).hexdigest() != expected_hash:
            raise ExactTokensUnavailable(f"the {name} vocabulary in {folder} is damaged")
        ranks: dict[bytes, int] = {}
        for line in contents.splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        return ranks

    local = types.FunctionType(
        make.__code__, {**make.__globals__, "load_tiktoken_bpe": load_local}, make.__name__
    )
    return tiktoken.Encoding(**local())


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


def _whole_prefix(raw: bytes) -> str:
    """The longest prefix of ``raw`` that is whole UTF-8 characters, decoded."""
    for end in range(len(raw), max(len(raw) - 4, -1), -1):
        try:
            return raw[:end].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return ""


def _whole_suffix(raw: bytes) -> str:
    for start in range(min(4, len(raw)) + 1):
        try:
            return raw[start:].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return ""


def cut_prefix(text: str, size: int, name: str) -> str:
    """A long prefix of ``text`` that is at most ``size`` tokens when tokenized alone.

    Work is proportional to ``size``: only a window of the text is tokenized. The prefix
    ends on a whole character; it is checked by counting it, and shortened if the tokens
    of a cut do not add up (BPE can merge across the cut differently).
    """
    return _cut(text, size, name, from_end=False)


def cut_suffix(text: str, size: int, name: str) -> str:
    """A long suffix of ``text`` that is at most ``size`` tokens when tokenized alone."""
    return _cut(text, size, name, from_end=True)


def _cut(text: str, size: int, name: str, *, from_end: bool) -> str:
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
        if from_end:
            piece = _whole_suffix(encoding.decode_bytes(tokens[-keep:]))
            candidate = text[len(text) - len(piece) :] if piece else ""
        else:
            piece = _whole_prefix(encoding.decode_bytes(tokens[:keep]))
            candidate = text[: len(piece)]
        over = count(candidate, name) - size
        if over <= 0:
            return candidate
        keep -= over
    return ""
