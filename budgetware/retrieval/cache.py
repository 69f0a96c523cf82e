"""What a reader remembers per artifact of a local store, so that reading a window costs
one ``stat`` of the artifact's name and one ``pread``: not a resolution of the reference,
an ``open`` and a ``close``, and two index lookups (about 10 us a call on a VM where a
system call costs 1-2 us; see docs/benchmarks.md).

Per store, for the artifacts read lately: the reference as the reader wrote it, the key it
resolved to, the character index, an open descriptor, and the identity of the file the
descriptor was opened on (device, inode, size, modification and change times, from the
``fstat`` of the descriptor). A read uses them only when a ``stat`` of the artifact's name
(relative to the store directory the store keeps open, never following a symlink) gives
that same identity; anything else sends the read the whole way again (the store's
resolution, verification and checks), which also happens at least once every ``RECHECK``
seconds per artifact, so the store's own bookkeeping (the last-use refresh, its
verified-artifact cache) sees every artifact in use. So:

- an artifact deleted (pruned, swept, by hand) is not found at the next read: the name is
  gone; its descriptor is closed then;
- an artifact replaced (another file renamed over its name: a new inode) is hashed again
  against its name before anything of it is read: the store forgets it had verified it;
- an artifact truncated, extended, rewritten or touched (size, modification or change
  time) is read the whole way, with the store's checks (a size that is no longer the
  verified one is not found);
- a window's bytes are still checked as the store checks them: the exact length, and the
  characters the index says they hold (ASCII for an all-ASCII artifact).

At most ``DESCRIPTORS`` descriptors are held per process, each of an artifact read within
the last ``IDLE`` seconds (an idle one is closed at the next read of anything): a deleted
artifact's disk space is held only that long, by at most that many. Windows, where an open
file cannot be deleted, holds none (and has no fast path). A forked child starts empty.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import OrderedDict

from budgetware.store.base import ContentStore
from budgetware.store.charindex import CharIndex
from budgetware.store.local import LocalArtifactStore

__all__ = [
    "ARTIFACTS",
    "DESCRIPTORS",
    "IDLE",
    "RECHECK",
    "REFS",
    "clear",
    "discard",
    "held_descriptors",
    "remember",
    "window",
]

# Artifacts remembered per store, and the references naming them (a reader may spell one
# reference several ways: the path, the bare SHA-256).
ARTIFACTS = 64
REFS = 256
# Descriptors held open per process, and how long an unused one stays open.
DESCRIPTORS = 4
IDLE = 60.0
# Every artifact is read the whole way at least this often (seconds).
RECHECK = 1.0

_ENABLED = os.name == "posix" and hasattr(os, "pread")

Identity = tuple[int, int, int, int, int]


def _identity(info: os.stat_result) -> Identity:
    return (info.st_ino, info.st_dev, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class _Artifact:
    """One artifact read lately: where its name is, its index, and an open descriptor."""

    __slots__ = (
        "ascii",
        "chars",
        "dir_fd",
        "fd",
        "identity",
        "index",
        "key",
        "lock",
        "name",
        "recheck_at",
        "used",
    )

    def __init__(
        self,
        key: str,
        name: str,
        dir_fd: int | None,
        index: CharIndex,
        fd: int,
        identity: Identity,
        now: float,
    ) -> None:
        self.key = key
        # The artifact's file name relative to the store directory's descriptor, or its
        # full path where directories are not reached by descriptor.
        self.name = name
        self.dir_fd = dir_fd
        self.index = index
        self.chars = index.chars
        self.ascii = index.ascii
        # Closed (None) under ``lock`` only, so a read never preads a number reused.
        self.fd: int | None = fd
        self.identity = identity
        self.lock = threading.Lock()
        self.used = now
        self.recheck_at = now + RECHECK

    def close(self) -> None:
        with self.lock:
            fd, self.fd = self.fd, None
        if fd is not None:
            _close(fd)


class _StoreCache:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.refs: OrderedDict[str, _Artifact] = OrderedDict()
        self.artifacts: OrderedDict[str, _Artifact] = OrderedDict()

    def drop(self, entry: _Artifact) -> None:
        with self.lock:
            if self.artifacts.get(entry.key) is entry:
                del self.artifacts[entry.key]
            for ref in [ref for ref, named in self.refs.items() if named is entry]:
                del self.refs[ref]
        _release(entry)


# id(store) -> its cache; an entry goes when its store does (weakref.finalize).
_CACHES: dict[int, _StoreCache] = {}
# The artifacts holding a descriptor (at most DESCRIPTORS), process-wide.
_HOLDERS: list[_Artifact] = []
_LOCK = threading.Lock()
_next_idle_check = 0.0


def window(store: ContentStore, ref: object, offset: int, limit: int) -> tuple[str, int] | None:
    """Characters ``offset`` to ``offset + limit`` of the artifact ``ref`` names and its
    length, from what was remembered of it, when the artifact is still the file it was;
    None when the read must go the whole way (not remembered, changed, due a recheck)."""
    cache = _CACHES.get(id(store))
    if cache is None or type(ref) is not str:
        return None
    entry = cache.refs.get(ref)
    if entry is None:
        return None
    now = time.monotonic()
    if now >= _next_idle_check:
        _close_idle(now)
    if now >= entry.recheck_at:
        return None
    try:
        info = _stat_name(entry)
    except OSError:
        cache.drop(entry)  # gone (or unreadable): the store says what happened
        return None
    if (
        info.st_ino,
        info.st_dev,
        info.st_size,
        info.st_mtime_ns,
        info.st_ctime_ns,
    ) != entry.identity:
        if (info.st_ino, info.st_dev) != entry.identity[:2]:
            # Another file took the name: it is hashed against the name before it is read.
            store.forget(entry.key)
        cache.drop(entry)
        return None
    total = entry.chars
    if offset > total:
        return None  # the whole way says so
    stop = offset + limit
    if stop > total:
        stop = total
    if stop == offset:
        return "", total
    if entry.ascii:
        # Characters are bytes; ASCII decodes a machine word at a time, and refuses any
        # other byte.
        with entry.lock:
            fd = entry.fd
            if fd is None:
                return None  # closed by another reader (idle, evicted): open it again
            data = os.pread(fd, stop - offset, offset)
        entry.used = now
        if len(data) == stop - offset:
            try:
                return data.decode("ascii"), total
            except UnicodeDecodeError:
                pass
        cache.drop(entry)
        return None
    begin, end, first_char, end_char = entry.index.span(offset, stop)
    with entry.lock:
        fd = entry.fd
        if fd is None:
            return None
        data = os.pread(fd, end - begin, begin)
    entry.used = now
    if len(data) == end - begin:
        try:
            text = data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            pass
        else:
            if len(text) == end_char - first_char:
                return text[offset - first_char : stop - first_char], total
    cache.drop(entry)
    return None


def remember(store: ContentStore, ref: object, key: str, index: CharIndex) -> None:
    """After a read that went the whole way: remember ``ref``, its artifact and index, and
    an open descriptor of it, for the next reads (local stores on POSIX only)."""
    if not _ENABLED or not isinstance(store, LocalArtifactStore) or type(ref) is not str:
        return
    now = time.monotonic()
    if now >= _next_idle_check:
        _close_idle(now)
    cache = _CACHES.get(id(store))
    if cache is None:
        new = _StoreCache()
        with _LOCK:
            cache = _CACHES.setdefault(id(store), new)
        if cache is new:
            weakref.finalize(store, _forget_store, id(store), cache)
    with cache.lock:
        entry = cache.artifacts.get(key)
    if entry is not None and _renew(entry, index, now):
        with cache.lock:
            cache.artifacts.move_to_end(key)
            _name(cache, ref, entry)
        return
    try:
        fd, info, folder = store.open_artifact(key)
    except OSError:
        return  # the next read goes the whole way again
    name = key + ".txt"
    if folder.fd is None:
        name = os.path.join(folder.path, name)
    if info.st_size != index.size:
        _close(fd)
        return  # changed since it was read: the next read finds out
    fresh = _Artifact(key, name, folder.fd, index, fd, _identity(info), now)
    with _LOCK:
        _HOLDERS.append(fresh)
        while len(_HOLDERS) > DESCRIPTORS:
            oldest = min(_HOLDERS, key=lambda held: held.used)
            _HOLDERS.remove(oldest)
            oldest.close()
    evicted = []
    with cache.lock:
        old = cache.artifacts.pop(key, None)
        if old is not None:
            evicted.append(old)
        cache.artifacts[key] = fresh
        while len(cache.artifacts) > ARTIFACTS:
            evicted.append(cache.artifacts.popitem(last=False)[1])
        gone = set(map(id, evicted))
        for stale in [r for r, named in cache.refs.items() if id(named) in gone]:
            del cache.refs[stale]
        _name(cache, ref, fresh)
    for entry in evicted:
        _release(entry)


def discard(store: ContentStore, ref: object) -> None:
    """Forget the artifact ``ref`` names (its read went the whole way and failed)."""
    cache = _CACHES.get(id(store))
    entry = cache.refs.get(ref) if cache is not None and type(ref) is str else None
    if cache is not None and entry is not None:
        cache.drop(entry)


def _stat_name(entry: _Artifact) -> os.stat_result:
    """The artifact's name as it is now (a symbolic link is not followed)."""
    if entry.dir_fd is None:
        return os.stat(entry.name, follow_symlinks=False)
    return os.stat(entry.name, dir_fd=entry.dir_fd, follow_symlinks=False)


def _renew(entry: _Artifact, index: CharIndex, now: float) -> bool:
    """Keep a remembered artifact after a recheck when its name still names the file it
    has open (no new open)."""
    if entry.fd is None:
        return False
    try:
        info = _stat_name(entry)
    except OSError:
        return False
    if _identity(info) != entry.identity or info.st_size != index.size:
        return False
    entry.index, entry.chars, entry.ascii = index, index.chars, index.ascii
    entry.used = now
    entry.recheck_at = now + RECHECK
    return True


def _name(cache: _StoreCache, ref: str, entry: _Artifact) -> None:
    cache.refs[ref] = entry
    cache.refs.move_to_end(ref)
    while len(cache.refs) > REFS:
        cache.refs.popitem(last=False)


def _release(entry: _Artifact) -> None:
    with _LOCK:
        if entry in _HOLDERS:
            _HOLDERS.remove(entry)
    entry.close()


def _close_idle(now: float) -> None:
    global _next_idle_check
    with _LOCK:
        _next_idle_check = now + IDLE / 4
        idle = [held for held in _HOLDERS if now - held.used >= IDLE]
        for held in idle:
            _HOLDERS.remove(held)
    for held in idle:
        held.close()


def _forget_store(store_id: int, cache: _StoreCache) -> None:
    with _LOCK:
        if _CACHES.get(store_id) is not cache:
            return  # forgotten already (or a forked child's copy of the parent's)
        del _CACHES[store_id]
    with cache.lock:
        entries = list(cache.artifacts.values())
        cache.artifacts.clear()
        cache.refs.clear()
    for entry in entries:
        _release(entry)


def clear() -> None:
    """Forget everything remembered and close every descriptor held."""
    global _next_idle_check
    with _LOCK:
        caches = list(_CACHES.items())
        _next_idle_check = 0.0
    for store_id, cache in caches:
        _forget_store(store_id, cache)


def held_descriptors() -> int:
    """How many artifact descriptors are open now (for tests and diagnostics)."""
    with _LOCK:
        return sum(1 for held in _HOLDERS if held.fd is not None)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _after_fork_in_child() -> None:
    # The child's copies of the parent's descriptors are closed; its locks may have been
    # held mid-fork, so nothing here waits for one.
    global _LOCK, _next_idle_check
    for held in _HOLDERS:
        if held.fd is not None:
            _close(held.fd)
            held.fd = None
    _HOLDERS.clear()
    _CACHES.clear()
    _LOCK = threading.Lock()
    _next_idle_check = 0.0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
