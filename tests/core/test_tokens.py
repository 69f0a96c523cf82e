"""Exact token units: tiktoken's counts with litellm's vocabulary files, every contract kept."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetware import BudgetConfig, ConfigError
from budgetware.core import tokens
from budgetware.core.measure import cut_prefix, cut_suffix
from budgetware.finalizer import ToolResult, finalize_batch, fit_text, measure

# Measuring, fitting and parsing touch no file: one file API is enough (fs_watch.py).
TOUCHES_NO_FILES = True

UNITS = ["tokens:o200k_base", "tokens:cl100k_base"]


def _unavailable() -> str | None:
    try:
        tokens.check_available("o200k_base")
    except tokens.ExactTokensUnavailable as exc:
        return str(exc)
    return None


# The lowest-versions run of scripts/ci-matrix installs no litellm and no tiktoken.
needs_vocabulary = pytest.mark.skipif(
    _unavailable() is not None, reason=f"exact tokens unavailable: {_unavailable()}"
)
REF = "/cache/budgetware/artifacts/" + "a" * 64 + ".txt"
SAMPLES = [
    "hello world",
    "汉字编码测试的文本内容。" * 50,
    "def f(x):\n    return x  # ok\n" * 40,
    "😀🚀✨ emoji <|endoftext|> special text",
    "   many    spaces\t\ttabs\n\n\n",
]


@needs_vocabulary
def test_counts_are_tiktokens_own_with_the_same_vocabulary_files() -> None:
    folder = tokens._vocabulary_dir()
    assert folder is not None
    code = (
        "import json, sys, tiktoken\n"
        "samples = json.loads(sys.stdin.read())\n"
        "print(json.dumps({n: [len(tiktoken.get_encoding(n).encode_ordinary(s)) "
        "for s in samples] for n in ('o200k_base', 'cl100k_base')}))\n"
    )
    # tiktoken finds the files in its cache directory, named as litellm ships them.
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(folder)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(SAMPLES),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    expected = json.loads(done.stdout)
    for unit in UNITS:
        assert [measure(s, unit) for s in SAMPLES] == expected[unit[7:]]  # type: ignore[arg-type]


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


def test_exact_units_that_cannot_work_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="BUDGETWARE_UNIT"):
        BudgetConfig.from_env({"BUDGETWARE_UNIT": "tokens:p50k_base"})
    blocked = (
        "import importlib.abc, sys\n"
        "class No(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'tiktoken':\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, No())\n"
        "from budgetware import BudgetConfig, ConfigError\n"
        "try:\n"
        "    BudgetConfig.from_env({'BUDGETWARE_UNIT': 'tokens:o200k_base'})\n"
        "except ConfigError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", blocked], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "tiktoken" in out
    assert 'pip install "budgetware[tokens]"' in out
    assert "BUDGETWARE_UNIT" in out


needs_tiktoken = pytest.mark.skipif(
    importlib.util.find_spec("tiktoken") is None, reason="tiktoken is not installed"
)


@needs_tiktoken
def test_a_litellm_without_the_vocabulary_file_is_a_config_error(tmp_path: Path) -> None:
    # litellm present, its tokenizers folder there, the file missing: the configuration was
    # accepted and every request then went out unbounded.
    folder = tmp_path / "litellm" / "litellm_core_utils" / "tokenizers"
    folder.mkdir(parents=True)
    (tmp_path / "litellm" / "__init__.py").write_text("")
    (tmp_path / "litellm" / "litellm_core_utils" / "__init__.py").write_text("")
    script = (
        "from budgetware import BudgetConfig, ConfigError\n"
        "try:\n"
        "    BudgetConfig.from_env({'BUDGETWARE_UNIT': 'tokens:o200k_base'})\n"
        "    print('accepted')\n"
        "except ConfigError as exc:\n"
        "    print(exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    ).stdout
    assert "accepted" not in out
    assert "BUDGETWARE_UNIT" in out
    assert "o200k_base vocabulary file" in out
    assert 'pip install "budgetware[tokens]"' in out
