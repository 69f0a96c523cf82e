"""Exact token units: tiktoken's counts with litellm's vocabulary files or tiktoken's cache,
never a download, every contract kept."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from exact_tokens import needs_vocabulary
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetware import BudgetConfig, ConfigError
from budgetware.core import tokens
from budgetware.core.measure import cut_prefix, cut_suffix
from budgetware.finalizer import ToolResult, finalize_batch, fit_text, measure

# Measuring, fitting and parsing touch no file: one file API is enough (fs_watch.py).
TOUCHES_NO_FILES = True

UNITS = ["tokens:o200k_base", "tokens:cl100k_base"]


REF = "/cache/budgetware/artifacts/" + "a" * 64 + ".txt"
SAMPLES = [
    "hello world",
    "汉字编码测试的文本内容。" * 50,
    "def f(x):\n    return x  # ok\n" * 40,
    "😀🚀✨ emoji <|endoftext|> special text",
    "   many    spaces\t\ttabs\n\n\n",
]


@needs_vocabulary
def test_an_output_is_tokenized_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = tokens._encode

    def counting(name: str, text: str) -> list[int]:
        calls.append(len(text))
        return real(name, text)

    monkeypatch.setattr(tokens, "_encode", counting)
    text = f"output {uuid.uuid4()} for the cache test " * 100
    first = measure(text, "tokens:o200k_base")
    assert measure((text + ".")[:-1], "tokens:o200k_base") == first  # equal text, new object
    assert calls == [len(text)]


texts = st.text(alphabet=st.sampled_from('ab \n汉😀\ud800é{}:,"0'), max_size=1_500)


@needs_vocabulary
@settings(max_examples=60, deadline=None)
@given(texts, st.integers(0, 400), st.sampled_from(UNITS), st.booleans())
def test_fit_is_bounded_idempotent_and_deterministic(
    text: str, allocation: int, unit: str, with_ref: bool
) -> None:
    refs = [REF] if with_ref else []
    once = fit_text(text, allocation, refs=refs, unit=unit)  # type: ignore[arg-type]
    assert measure(once, unit) <= allocation  # type: ignore[arg-type]
    assert fit_text(once, allocation, refs=refs, unit=unit) is once  # type: ignore[arg-type]
    assert fit_text(text, allocation, refs=refs, unit=unit) == once  # type: ignore[arg-type]


@needs_vocabulary
@settings(max_examples=60, deadline=None)
@given(texts, st.integers(0, 300), st.sampled_from(UNITS))
def test_cuts_stay_within_the_size_and_split_no_character(text: str, size: int, unit: str) -> None:
    head = cut_prefix(text, size, unit)  # type: ignore[arg-type]
    tail = cut_suffix(text, size, unit)  # type: ignore[arg-type]
    assert text.startswith(head)
    assert text.endswith(tail)
    assert measure(head, unit) <= size  # type: ignore[arg-type]
    assert measure(tail, unit) <= size  # type: ignore[arg-type]
    for piece, edge in ((head, -1), (tail, 0)):
        if piece and piece != text:
            c = piece[edge]
            assert not (
                "\ud800" <= c <= "\udbff"
                and edge == -1
                and len(piece) < len(text)
                and "\udc00" <= text[len(piece)] <= "\udfff"
            )


@needs_vocabulary
def test_a_cjk_batch_is_bounded_in_exact_tokens_where_the_estimate_undercounts() -> None:
    text = "鱻麤龘靐齉爩" * 2_000
    estimate, exact = measure(text, "tokens"), measure(text, "tokens:o200k_base")
    assert exact > estimate  # bytes / 4 undercounts CJK
    config = BudgetConfig(batch_budget=3_000, unit="tokens:o200k_base", persist=False)
    batch = [ToolResult(str(i), "read", (text + str(i),)) for i in range(3)]
    result = finalize_batch(batch, config=config)
    assert sum(measure(e.slots[0], "tokens:o200k_base") for e in result) <= 3_000
    assert finalize_batch(result, config=config) == result
    assert "tokens" in result[0].slots[0].split("\n", 1)[0]


def test_an_unknown_encoding_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="BUDGETWARE_UNIT"):
        BudgetConfig.from_env({"BUDGETWARE_UNIT": "tokens:p50k_base"})


# Each subprocess below runs with the network closed (a connection attempt fails the run),
# and, unless told, without litellm: it cannot be imported or found.
PRELUDE = """\
import importlib.abc, json, socket, sys
HIDDEN = set(json.loads(sys.argv[1]))
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in HIDDEN:
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, Hide())
def no_network(*args, **kwargs):
    raise AssertionError('a network call')
socket.socket.connect = socket.socket.connect_ex = socket.create_connection = no_network
from budgetware import BudgetConfig, ConfigError
def configure(unit):
    try:
        BudgetConfig.from_env({'BUDGETWARE_UNIT': unit})
    except ConfigError as exc:
        return str(exc)
    return 'accepted'
"""


def _run(
    script: str, env: dict[str, str], hidden: tuple[str, ...] = ("litellm",), stdin: str = ""
) -> str:
    environ = {**os.environ, **env}
    for name in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):  # litellm's import sets one
        if name not in env:
            environ.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", PRELUDE + script, json.dumps(hidden)],
        input=stdin,
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _litellm_vocabulary() -> list[Path]:
    spec = importlib.util.find_spec("litellm")
    folders = [
        Path(f) / "litellm_core_utils" / "tokenizers"
        for f in (spec.submodule_search_locations or () if spec else ())
    ]
    # tiktoken names its cache entries by the SHA-1 of the download URL, as litellm its files.
    names = [
        hashlib.sha1(
            f"https://openaipublic.blob.core.windows.net/encodings/{e}.tiktoken".encode()
        ).hexdigest()
        for e in tokens.ENCODINGS
    ]
    return [folder / name for folder in folders for name in names if (folder / name).is_file()]


needs_tiktoken = pytest.mark.skipif(
    importlib.util.find_spec("tiktoken") is None, reason="tiktoken is not installed"
)
needs_files = pytest.mark.skipif(
    len(_litellm_vocabulary()) != len(tokens.ENCODINGS),
    reason="the tests' vocabulary files come from litellm (dev extra)",
)


@pytest.fixture
def filled_cache(tmp_path: Path) -> Path:
    """A tiktoken cache directory holding both vocabularies, as tiktoken would have filled it."""
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    for path in _litellm_vocabulary():
        shutil.copyfile(path, cache / path.name)
    return cache


COUNTS = """
samples = json.loads(sys.stdin.read())
import tiktoken
from budgetware.core.measure import measure
print(configure('tokens:o200k_base'), configure('tokens:cl100k_base'))
ours = {n: [measure(s, 'tokens:' + n) for s in samples] for n in ('o200k_base', 'cl100k_base')}
print(json.dumps(ours))
print('litellm' in sys.modules)
"""
# tiktoken's own counts from the same cache (loading both vocabularies again).
TIKTOKEN_COUNTS = """
theirs = {
    n: [len(tiktoken.get_encoding(n).encode_ordinary(s)) for s in samples]
    for n in ('o200k_base', 'cl100k_base')
}
print(json.dumps(theirs))
"""


@needs_tiktoken
@needs_files
@pytest.mark.parametrize("where", ["TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR", "TMPDIR"])
def test_without_litellm_the_vocabulary_comes_from_tiktokens_cache(
    filled_cache: Path, where: str
) -> None:
    # tiktoken's cache as tiktoken finds it: its variable, the older one, or data-gym-cache in
    # the temporary directory.
    if where == "TMPDIR":
        filled_cache = filled_cache.rename(filled_cache.with_name("data-gym-cache"))
        env = {"TMPDIR": str(filled_cache.parent)}
    else:
        env = {where: str(filled_cache)}
    # tiktoken's own counts once: the other places hold the same files.
    script = COUNTS + (TIKTOKEN_COUNTS if where == "TIKTOKEN_CACHE_DIR" else "")
    out = _run(script, env, stdin=json.dumps(SAMPLES)).splitlines()
    assert out[0] == "accepted accepted"
    ours = json.loads(out[1])
    assert out[2] == "False"
    if where == "TIKTOKEN_CACHE_DIR":
        assert ours == json.loads(out[3])  # tiktoken's own counts, read from the same cache
    # ... and the counts with litellm's files, in this process.
    for unit in UNITS:
        assert [measure(s, unit) for s in SAMPLES] == ours[unit[7:]]  # type: ignore[arg-type]


@needs_tiktoken
def test_no_vocabulary_anywhere_is_a_config_error_that_says_what_to_do(tmp_path: Path) -> None:
    out = _run(
        "print(configure('tokens:o200k_base'))", {"TIKTOKEN_CACHE_DIR": str(tmp_path)}
    ).strip()
    assert "BUDGETWARE_UNIT" in out  # the setting, named by the ConfigError
    assert "unit 'tokens:o200k_base' needs the o200k_base vocabulary file, found none" in out
    assert f"tiktoken's cache {tmp_path}" in out
    assert "litellm" not in out
    assert "python -c \"import tiktoken; tiktoken.get_encoding('o200k_base')\"" in out
    assert "TIKTOKEN_CACHE_DIR" in out
    assert "docs/previews.md#exact-token-budgets" in out
    # An empty TIKTOKEN_CACHE_DIR turns tiktoken's cache off: nowhere is left to look.
    out = _run("print(configure('tokens:cl100k_base'))", {"TIKTOKEN_CACHE_DIR": ""})
    assert "cl100k_base vocabulary file, found none (looked in nowhere)" in out


@needs_tiktoken
@needs_files
def test_a_damaged_vocabulary_is_refused_and_named(filled_cache: Path) -> None:
    (damaged,) = [p for p in filled_cache.iterdir() if p.stat().st_size > 3_000_000]  # o200k
    damaged.write_bytes(damaged.read_bytes()[:-10])
    script = "print(configure('tokens:o200k_base')); print(configure('tokens:cl100k_base'))"
    out = _run(script, {"TIKTOKEN_CACHE_DIR": str(filled_cache)}).splitlines()
    assert f"found a damaged copy ({damaged}) and no whole one" in out[0]
    assert out[1] == "accepted"


def test_without_tiktoken_the_error_names_the_extra() -> None:
    out = _run("print(configure('tokens:o200k_base'))", {}, hidden=("tiktoken", "litellm"))
    assert "unit 'tokens:o200k_base' needs tiktoken" in out
    assert 'pip install "budgetware[tokens]"' in out
    assert "BUDGETWARE_UNIT" in out


@needs_tiktoken
def test_a_litellm_without_the_vocabulary_file_is_a_config_error(tmp_path: Path) -> None:
    # litellm present, its tokenizers folder there, the file missing, tiktoken's cache empty:
    # the configuration was once accepted and every request then went out unbounded.
    folder = tmp_path / "litellm" / "litellm_core_utils" / "tokenizers"
    folder.mkdir(parents=True)
    (tmp_path / "litellm" / "__init__.py").write_text("")
    (tmp_path / "litellm" / "litellm_core_utils" / "__init__.py").write_text("")
    (tmp_path / "cache").mkdir()
    env = {
        "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]),
        "TIKTOKEN_CACHE_DIR": str(tmp_path / "cache"),
    }
    out = _run("print(configure('tokens:o200k_base'))", env, hidden=())
    assert "BUDGETWARE_UNIT" in out
    assert f"looked in litellm's {folder}; tiktoken's cache {tmp_path / 'cache'}" in out
