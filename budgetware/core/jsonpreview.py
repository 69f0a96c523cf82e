"""JSON previews: a JSON document shortened to valid JSON of the same shape within a room.

Arrays keep their first and last elements, and those of the middle that carry a failure,
with marker elements counting the rest; strings keep their head and tail; objects keep
every key while their skeleton fits, their values sharing the rest max-min fair. Only
the cuts change: numbers keep their spelling and strings their value, so a preview is
valid JSON whenever the document is, and the same document gives the same preview.
"""

from __future__ import annotations

import gc
import itertools
import re
from collections.abc import Iterable, Iterator
from typing import Any

from budgetware.core.allocate import allocate
from budgetware.core.gil import give_way
from budgetware.core.jsonio import _orjson, compact_literal, dumps_literal, loads_literal
from budgetware.core.measure import Unit, cut_prefix, cut_suffix, measure
from budgetware.core.notice import Wording
from budgetware.core.salient import SalientPattern, salient_spans

_msgspec: Any
try:  # pragma: no cover - depends on the platform
    import msgspec as _msgspec
except ImportError:  # pragma: no cover
    _msgspec = None
else:
    _decode = _msgspec.json.decode
    _plain = _msgspec.json.Decoder(float_hook=float).decode  # 1e400: inf, not an error

__all__ = ["parse_document", "read_document", "render_within"]

# The smallest value a shortened member or element may become: a summary string "...".
_MIN_VALUE = 5
_ELLIPSIS = "..."
# An array shows at most this many elements (first ones and last ones) when they must be
# shortened to fit; whole elements are kept as long as they fit.
_MAX_SHRUNK_ELEMENTS = 3
# JSON's own whitespace (what a parser skips around a document), after an optional BOM.
_LEADING_SPACE = re.compile(r"\ufeff?[ \t\n\r]*")
_SPACE = " \t\n\r"
# An array of numbers at least this long is split only at its ends (``_Ends``).
_LONG = 1 << 16
_WINDOW = 1 << 18  # how much of an array's text one call decodes: about 0.3 ms
_LITERAL = 4 << 20  # the longest text read by the literal parse (with NaN): about 45 ms
_Raw: Any = _msgspec.Raw if _msgspec is not None else ()  # msgspec's undecoded JSON value


def read_document(text: str) -> Document | None:
    """``text`` as a Document of ``msgspec.Raw`` parts, its root opened, which checks the
    text (a long array a window at a time: no call holds the GIL long); None without
    msgspec and orjson, or for text msgspec refuses (``NaN``, a lone surrogate, bad JSON)."""
    if _msgspec is None or _orjson is None:
        return None
    try:
        data = text.encode("utf-8").strip(b" \t\n\r")
        doc = Document(_msgspec.Raw(data), respelled(data))  # (no copy of the text to scan)
        give_way()
        if isinstance(doc.open(doc.value), _Ends):  # never decoded whole: check it
            _decode(doc.value, type=_Raw)
        return doc
    except (UnicodeEncodeError, _msgspec.DecodeError, RecursionError):
        return None


# Once escaped backslashes are dropped: an escape orjson writes otherwise, ``\/`` or a
# ``\uXXXX`` of anything but a control character without a short form (in lowercase).
_OTHER_ESCAPE = re.compile(rb"\\(?:/|u(?!00(?:0[0-7bef]|1[0-9a-f])))")


def respelled(compact: bytes) -> bool:
    """Whether compact JSON text holds an escape that ``dumps_literal(loads_literal())``
    writes otherwise (``\\u00e9`` as ``é``, ``\\/`` as ``/``)."""
    return b"\\" in compact and bool(_OTHER_ESCAPE.search(compact.replace(b"\\\\", b"")))


class Document:
    """A parsed JSON object or array. With msgspec, its text as ``msgspec.Raw`` opened a
    level at a time where the preview looks, so an omitted middle is never made into
    values; else the literal parse, each container's size measured once."""

    __slots__ = ("_known", "_text_bytes", "_written", "limit", "respell", "value")

    def __init__(self, value: Any, respell: bool = False) -> None:
        self.value = value
        # By identity: the sizes of parsed containers, or the opened parts of a Raw.
        self._known: dict[int, Any] = {}
        self._written: dict[int, bytes] = {}  # Raw parts as the literal parse writes them
        self._text_bytes: int | None = None
        # A Raw part with more than ``limit`` bytes besides whitespace, the largest room (six
        # times that with escapes to respell, ``\u00e9`` as ``é``), measures its own length.
        self.respell = respell
        self.limit = 0

    def size(self, node: Any) -> int:
        """The compact size of ``node``, a part of this document."""
        if isinstance(node, _Raw):
            if len(node) > self.limit:  # too large for any room, whitespace aside?
                dense = bytes(memoryview(node)[: 4 * self.limit]).translate(None, b" \t\n\r")
                if len(dense) > self.limit:
                    return len(node)  # then never compacted to be measured
            return len(self.written(node))
        if isinstance(node, (dict, list)):
            known: int | None = self._known.get(id(node))
            if known is None:
                known = self._known[id(node)] = _size(node)
            return known
        return _size(node)

    def written(self, node: Any) -> bytes:
        """A Raw part as the literal parse writes it."""
        known = self._written.get(id(node))
        if known is None:
            raw = bytes(node)
            respell = self.respell and respelled(raw)
            known = compact_literal(raw) if respell else _msgspec.json.format(raw, indent=-1)
            self._written[id(node)] = known
        return known

    def open(self, node: Any) -> Any:
        """A part's value one level deep: a list or dict of parts, a string, or the part
        itself (a number, ``true``, ...)."""
        if not isinstance(node, _Raw):
            return node
        opened = self._known.get(id(node))
        if opened is None:
            kind = memoryview(node)[0]
            if kind == 0x5B:
                data = bytes(node)
                flat = len(data) >= _LONG and all(data.find(c, 1) < 0 for c in (b'"', b"[", b"{"))
                opened = _Ends(data) if flat else _elements(data)
                self._known[id(node)] = opened
            elif kind == 0x7B:
                opened = self._known[id(node)] = _decode(node, type=dict[str, _Raw])
            else:
                opened = _decode(node) if kind == 0x22 else node
        return opened

    def whole(self, node: Any) -> Any:
        """A part as it goes into a preview unchanged."""
        return _orjson.Fragment(self.written(node)) if isinstance(node, _Raw) else node

    def plain(self, node: Any) -> Any:
        """A part as plain values to look for failures in (None: a Raw without a string)."""
        if not isinstance(node, _Raw):
            return node
        return _plain(node) if b'"' in bytes(node) else None

    def text_bytes(self, text: str) -> int:
        """UTF-8 bytes of the document's text (the same text at every call)."""
        if self._text_bytes is None:
            ascii_only = text.isascii()  # (a flag of the string: no scan)
            self._text_bytes = len(text if ascii_only else text.encode("utf-8", "surrogatepass"))
        return self._text_bytes


class _Ends:
    """The elements of a long compact array of numbers, ``true``, ``false`` and ``null``,
    split off its two ends as the fitter reaches in: never its middle."""

    __slots__ = ("back", "cuts", "front", "n", "text")

    def __init__(self, text: bytes) -> None:
        self.text, self.n = text, text.count(b",") + 1
        self.front: list[Any] = []
        self.back: list[Any] = []  # from the last element backwards
        self.cuts = [1, len(text) - 1]  # where the splitting from each end stopped

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> Any:
        back = self.n - 1 - index
        while index >= len(self.front) and back >= len(self.back):
            self._split(index >= self.n // 2)
        return self.front[index] if index < len(self.front) else self.back[back]

    def _split(self, from_back: bool) -> None:  # the next elements off one end of the rest
        (start, stop), step = self.cuts, _LONG
        while True:
            low, high = (max(stop - step, start), stop) if from_back else (start, start + step)
            pieces = self.text[low : min(high, stop)].split(b",")
            if min(high, stop) - low < stop - start:  # the piece at the cut may be incomplete
                pieces = pieces[1:] if from_back else pieces[:-1]
            if pieces:
                break
            step *= 2
        taken = sum(map(len, pieces)) + len(pieces)
        if from_back:
            self.cuts[1] -= taken
            self.back.extend(_msgspec.Raw(p.strip()) for p in reversed(pieces))
        else:
            self.cuts[0] += taken
            self.front.extend(_msgspec.Raw(p.strip()) for p in pieces)


def _elements(data: bytes) -> Any:
    """The elements of an array's text as Raw parts, decoded ``_WINDOW`` bytes at a time.
    A window ends at a comma between ``]``, ``}`` or ``"`` and what the first element
    starts with, if that comma is outside every element: ``[`` + the window + ``]``
    decodes (a cut inside an element would leave it open)."""
    at = re.match(rb"\[\s*", data).end()  # type: ignore[union-attr]
    cuts = re.compile(rb'[]}"]\s*(,)(?=\s*' + re.escape(data[at : at + 1]) + b")")
    parts: list[Any] = []
    start = cut = 1
    tries = 4
    while tries:
        at = max(cut, start + _WINDOW)
        found = cuts.search(data, at, at + _WINDOW)
        if found is None:
            break
        cut = found.start(1)
        try:
            parts += _decode(b"[" + data[start:cut] + b"]", type=list[_Raw])
            start, tries = cut + 1, 4
            give_way()
        except _msgspec.DecodeError:  # a comma inside an element (or bad text): the next one
            cut, tries = cut + 1, tries - 1
    return parts + _decode(data if start == 1 else b"[" + data[start:], type=list[_Raw])


def parse_document(text: str) -> Document | None:
    """The JSON object or array that ``text`` is, or None (any other text, invalid JSON).

    A byte order mark and any amount of whitespace around the document are allowed. Every
    number is written back as the document spells it.
    """
    first = _LEADING_SPACE.match(text).end()  # type: ignore[union-attr]
    end = text[-64:].rstrip(_SPACE) or text.rstrip(_SPACE)  # no copy of a large text
    if first >= len(text) or text[first] not in "{[" or end[-1] not in "}]":
        return None
    body = text[first:] if first and text[0] == "\ufeff" else text
    doc = read_document(body)
    if doc is not None or len(body) > _LITERAL:
        return doc
    collecting = gc.isenabled()
    gc.disable()  # a parsed tree holds no cycle: the collector's passes would find none
    try:
        value = loads_literal(body)
    except (ValueError, RecursionError):
        return None
    finally:
        if collecting:
            gc.enable()
    return Document(value)  # (an object or array: the text starts with "{" or "[")


def render_within(
    doc: Document,
    room: int,
    unit: Unit,
    text: str,
    total: int,
    words: Wording,
    salient: SalientPattern | None = None,
    salient_percent: int = 0,
) -> tuple[str, int] | None:
    """Compact JSON of the document's shape measuring at most ``room`` in ``unit``, and how
    much of it is the document's own content (not markers or summaries); or None.

    ``text`` (the original, measuring ``total``) tells how bytes relate to the unit, for
    the first guess; the result is measured in the unit and shrunk until it fits. Up to
    ``salient_percent`` of a cut array's room goes to elements of its omitted middle that
    carry an error or a failure (``salient``: the pattern of salient lines).
    """
    if room < 2:
        return None
    if unit == "utf8_bytes":
        budget = room
    else:
        # Bytes per unit of the original text scale the first guess; then measure, shrink.
        scale = doc.text_bytes(text) / max(total, 1)
        budget = max(int(room * min(scale, 8.0)), 2)
    fitter = _Fitter(doc, words, salient, salient_percent)
    for _ in range(16):
        doc.limit = (6 if doc.respell else 1) * max(budget, _MIN_SALIENT_ELEMENT)
        shrunk = fitter.fit(doc.value, budget, doc.size(doc.value))
        if shrunk is None:
            return None
        value, raw_size, markers = shrunk
        out = dumps_literal(value).decode("utf-8")
        size = measure(out, unit)
        if size <= room:
            return out, int(size * (1 - markers / max(raw_size, 1)))
        budget = min(budget - 1, int(budget * room / size * 0.97))
        if budget < 2:
            return None
    return None


def _size(value: Any) -> int:
    return len(dumps_literal(value))


# A fitted value: (the value, its size, how many of its bytes are markers or summaries).
_Fit = tuple[Any, int, int]


def _summary(value: Any, budget: int, words: Wording) -> _Fit | None:
    """A string standing for a value with too little room: what it was, or just ``...``."""
    if isinstance(value, dict):
        candidates = [words.json_summary("object", len(value)), _ELLIPSIS]
    elif isinstance(value, (list, _Ends)):
        candidates = [words.json_summary("array", len(value)), _ELLIPSIS]
    else:
        candidates = [_ELLIPSIS]
    for candidate in candidates:
        size = _size(candidate)
        if size <= budget:
            return candidate, size, size
    return None


def _fit_str(s: str, budget: int, words: Wording) -> _Fit | None:
    # Cut by UTF-8 bytes, then measure: an escape takes two to six bytes, so the next try
    # scales what is kept by what its bytes cost, not by the excess alone.
    keep = budget - 2 - len(words.json_string_cut(len(s)))
    for _ in range(16):
        if keep < 8:
            room = budget - 2
            short = cut_prefix(s, max(room - len(_ELLIPSIS), 0), "utf8_bytes") + _ELLIPSIS
            while short != _ELLIPSIS and _size(short) > budget:
                kept = short[: -len(_ELLIPSIS)]
                short = cut_prefix(kept, len(kept) // 2, "chars") + _ELLIPSIS
            size = _size(short)
            if size > budget:
                return None
            return short, size, size if short == _ELLIPSIS else len(_ELLIPSIS)
        head = cut_prefix(s, keep // 2, "utf8_bytes")
        tail = cut_suffix(s, keep - keep // 2, "utf8_bytes")
        marker = words.json_string_cut(len(s) - len(head) - len(tail))
        out = head + marker + tail
        size = _size(out)
        if size <= budget:
            return out, size, len(marker)
        content = size - 2 - len(marker)
        keep = min(keep - 1, keep * (budget - 2 - len(marker)) // max(content, 1))
    return None


def _ends(n: int) -> Iterator[int]:
    """Indices from both ends inwards: 0, n-1, 1, n-2, ... (as many as are taken)."""
    i, j = 0, n - 1
    while i <= j:
        yield i
        if i != j:
            yield j
        i += 1
        j -= 1


# -- elements that carry an error or a failure -------------------------------------------

# A string that names a failure by itself: a status ("failed", "FAILURE", "error").
_FAILURE_WORDS = frozenset(
    [
        "fail",
        "failed",
        "failure",
        "failing",
        "error",
        "errored",
        "errors",
        "fatal",
        "panic",
        "panicked",
        "crashed",
        "broken",
        "aborted",
        "timeout",
        "timed_out",
        "timedout",
    ]
)
_LONGEST_WORD = max(map(len, _FAILURE_WORDS))
# A member that holds an error when its value is a non-empty string, object or array.
_ERROR_KEYS = frozenset(
    [
        "error",
        "errors",
        "exception",
        "exceptions",
        "failure",
        "failures",
        "traceback",
        "stacktrace",
        "stack_trace",
    ]
)
# A salient element is shortened to no less than this (its keys and short values whole).
_MIN_SALIENT_ELEMENT = 160
# Elements checked from each end of an array's omitted middle, at most (a number, never a
# time: the same document always gives the same preview).
_ELEMENTS_CHECKED = 1_000


def _salient_element(value: Any, pattern: SalientPattern) -> bool:
    """Whether a JSON value carries an error or a failure: a string in it holds a line the
    salient-line ``pattern`` matches, or is a failure status such as ``"failed"``, or a
    member named ``error``, ``exception``, ``failures``, ... holds something (a non-empty
    string, object or array, or true)."""
    give_way()  # (at most once a millisecond) a thousand elements take tens of them
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if _salient_string(node, pattern):
                return True
        elif isinstance(node, dict):
            for key, child in node.items():
                if (
                    child is True or (isinstance(child, (str, list, dict)) and child)
                ) and key.lower() in _ERROR_KEYS:
                    return True
                stack.append(child)
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _salient_string(s: str, pattern: SalientPattern) -> bool:
    if len(s) <= _LONGEST_WORD and s.strip().lower() in _FAILURE_WORDS:
        return True
    # One search finds a candidate line; the scan confirms it, each line matched alone.
    if pattern.regex.search("\n" + s) is None:
        return False
    return bool(salient_spans(s + "\n", 0, len(s) + 1, pattern))


class _Fitter:
    """Shortens the parts of one document: sizes of its own parts come from the document
    (measured once), those of the values made while fitting are measured as they come."""

    __slots__ = ("doc", "percent", "salient", "words")

    def __init__(
        self, doc: Document, words: Wording, salient: SalientPattern | None, percent: int
    ) -> None:
        self.doc = doc
        self.words = words
        self.salient = salient if percent > 0 else None
        self.percent = percent

    def fit(self, value: Any, budget: int, size: int) -> _Fit | None:
        """``(shortened value, its size, its marker bytes)`` with size <= ``budget``, or
        None; ``value`` is a part of the document, measuring ``size``."""
        if size <= budget:
            return self.doc.whole(value), size, 0
        words, value = self.words, self.doc.open(value)
        if isinstance(value, str):
            return _fit_str(value, budget, words)
        if isinstance(value, (list, _Ends)):
            return self.fit_list(value, budget) or _summary(value, budget, words)
        if isinstance(value, dict):
            return self.fit_dict(value, budget) or _summary(value, budget, words)
        return _summary(value, budget, words)

    def fit_list(self, items: list[Any] | _Ends, budget: int) -> _Fit | None:
        n = len(items)
        sizes: dict[int, int] = {}
        front, back = self._whole_ends(items, budget, sizes)
        if front + back >= min(n, 2):
            if self._salient_middle(items, front, n - back):
                done = self._with_salient(items, budget, sizes)
                if done is not None:
                    return done
            whole = self.doc.whole
            kept = [(i, whole(items[i]), 0) for i in (*range(front), *range(n - back, n))]
            return self._gapped(kept, n)
        # Elements too large to keep whole: shorten the first (and last) ones instead.
        # Every value fits any share of at least _MIN_VALUE (as a summary at worst), so
        # one pass settles it: no search, and the cost stays linear in what is kept.
        words, measure_part = self.words, self.doc.size
        count = min(n, _MAX_SHRUNK_ELEMENTS)
        while count > 0:
            omitted = n - count
            marker = _size(words.json_items_omitted(omitted)) + 1 if omitted else 0
            room = budget - 2 - (count - 1) - marker
            if room >= count * _MIN_VALUE:
                break
            count -= 1
        if count == 0:
            return None
        picks = sorted(itertools.islice(_ends(n), count))
        lengths = [sizes[i] if i in sizes else measure_part(items[i]) for i in picks]
        fitted = []
        for index, share, length in zip(picks, allocate(lengths, room), lengths):
            done = self.fit(items[index], share, length)
            if done is None:  # pragma: no cover - a share of _MIN_VALUE always fits a summary
                return None
            fitted.append((index, done[0], done[2]))
        result = self._gapped(fitted, n)
        return result if result[1] <= budget else None

    def _whole_ends(
        self, items: list[Any] | _Ends, budget: int, sizes: dict[int, int]
    ) -> tuple[int, int]:
        """How many whole elements fit from the front and from the back (the first, the
        last, the second, ... while they do), with one marker for the rest."""
        words, measure_part = self.words, self.doc.size
        n = len(items)
        front = back = 0
        used = 2  # the brackets
        for index in _ends(n):
            size = sizes.get(index)
            if size is None:
                size = sizes[index] = measure_part(items[index])
            kept = front + back + 1
            marker = _size(words.json_items_omitted(n - kept)) + 1 if kept < n else 0
            if used + size + (kept - 1) + marker > budget:
                break
            if index == front:
                front += 1
            else:
                back += 1
            used += size
        return front, back

    def _salient_middle(self, items: list[Any] | _Ends, start: int, stop: int) -> list[int]:
        """Indices of the omitted middle ``[start, stop)`` whose elements carry an error or
        a failure: up to ``_ELEMENTS_CHECKED`` from each end of it are looked at."""
        pattern = self.salient
        if pattern is None or start >= stop:
            return []
        if stop - start <= 2 * _ELEMENTS_CHECKED:
            checked: Iterable[int] = range(start, stop)
        else:
            checked = itertools.chain(
                range(start, start + _ELEMENTS_CHECKED), range(stop - _ELEMENTS_CHECKED, stop)
            )
        plain = self.doc.plain
        return [i for i in checked if _salient_element(plain(items[i]), pattern)]

    def _with_salient(
        self, items: list[Any] | _Ends, budget: int, sizes: dict[int, int]
    ) -> _Fit | None:
        """The array with whole elements at both ends and, between them, the elements of
        the omitted middle that carry an error or a failure, in a share of the room
        (``percent``), as lines do: distinct ones, from both ends of the middle, each
        shortened to a quarter of the share at most."""
        n, words, measure_part = len(items), self.words, self.doc.size
        reserve = budget * self.percent // 100
        cap = max(reserve // 4, _MIN_SALIENT_ELEMENT)
        gap = _size(words.json_items_omitted(n)) + 1  # the widest marker, and its comma
        # The middle that the ends leave when the whole share goes to the salient ones.
        front, back = self._whole_ends(items, budget - reserve, sizes)
        found = self._salient_middle(items, front, n - back)
        chosen: dict[int, tuple[Any, int]] = {}  # index: (value shown, its marker bytes)
        seen: set[bytes] = set()
        used = 0
        for index in (found[i] for i in _ends(len(found))):
            size = sizes.get(index)
            if size is None:
                size = sizes[index] = measure_part(items[index])
            shown = self.fit(items[index], min(size, cap), size)
            if shown is None:
                continue
            written = dumps_literal(shown[0])
            if written in seen:
                continue  # an element like one shown already: once
            if used + shown[1] + 1 + gap > reserve:
                break
            seen.add(written)
            chosen[index] = (shown[0], shown[2])
            used += shown[1] + 1 + gap
        if not chosen:
            return None
        # The ends take back what the chosen ones leave (and keep those they reach whole).
        front, back = self._whole_ends(items, budget - used, sizes)
        if front + back < min(n, 2):
            return None
        whole = [(i, self.doc.whole(items[i]), 0) for i in (*range(front), *range(n - back, n))]
        picked = [(i, v, m) for i, (v, m) in chosen.items() if front <= i < n - back]
        result = self._gapped(sorted(whole + picked), n)  # the share counted every marker
        return result if result[1] <= budget else None

    def _gapped(self, kept: list[tuple[int, Any, int]], n: int) -> _Fit:
        """The kept ``(index, value, marker bytes)`` in order, with a marker element for
        each run of omitted elements between them."""
        words = self.words
        out: list[Any] = []
        markers = 0
        last = -1
        for index, value, marks in kept:
            if index > last + 1:
                marker = words.json_items_omitted(index - last - 1)
                out.append(marker)
                markers += _size(marker) + 1
            out.append(value)
            markers += marks
            last = index
        if last < n - 1:
            marker = words.json_items_omitted(n - 1 - last)
            out.append(marker)
            markers += _size(marker) + 1
        return out, _size(out), markers

    def fit_dict(self, obj: dict[str, Any], budget: int) -> _Fit | None:
        words, doc = self.words, self.doc
        keys = list(obj)
        marker_key = _ELLIPSIS
        while marker_key in obj:
            marker_key += "."
        key_sizes = [_size(k) + 1 for k in keys]  # "key":
        # Keep every key while the skeleton and the smallest values fit; else the first
        # ones and one marker member for the rest.
        count = len(keys)
        while count > 0:
            omitted = len(keys) - count
            marker = (
                _size(marker_key) + 1 + _size(words.json_keys_omitted(omitted)) + 1
                if omitted
                else 0
            )
            skeleton = 2 + sum(key_sizes[:count]) + (count - 1) + marker
            if skeleton + count * _MIN_VALUE <= budget:
                break
            count -= 1
        if count == 0:
            return None
        kept = keys[:count]
        room = budget - skeleton
        values = [obj[k] for k in kept]
        lengths = [doc.size(v) for v in values]
        shares = allocate(lengths, room)
        out: dict[str, Any] = {}
        markers = marker
        for key, value, share, length in zip(kept, values, shares, lengths):
            done = self.fit(value, share, length)
            if done is None:
                return None
            out[key] = done[0]
            markers += done[2]
        if omitted:
            out[marker_key] = words.json_keys_omitted(omitted)
        size = _size(out)
        return (out, size, markers) if size <= budget else None
