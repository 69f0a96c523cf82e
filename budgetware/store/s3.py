"""The S3 artifact store: ``s3://bucket/prefix/<sha256>.txt`` objects shared by many
processes and machines (boto3, the ``s3`` extra).

Every object is written with its SHA-256 checksum, which S3 checks and returns on ``HEAD``:
an object is named only when that checksum is its name. Every call runs in a worker thread
with a deadline (botocore's timeouts are per socket read, so a trickling server could hold
it for ever); after a failure the store is skipped for ``BREAKER_SECONDS``. A new artifact
is one conditional ``PutObject``; a name already taken adds one ``HeadObject``.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import os
import re
import threading
import time
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from budgetware.core.artifacts import ArtifactNotFound, ArtifactStoreError, check_key
from budgetware.core.gil import give_way
from budgetware.store import sweeper
from budgetware.store.base import CACHE_ENTRIES, MIB, ArtifactChanged, ContentStore, Limits, Probe
from budgetware.store.lifecycle import Entry, Listing

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["BREAKER_SECONDS", "S3ArtifactStore", "require_boto3"]

_INSTALL = 'the s3:// artifact store needs boto3: pip install "budgetware[s3]"'
# After a failed call the store is skipped this long (no network at all).
BREAKER_SECONDS = 30.0
_ARTIFACT = re.compile(r"[0-9a-f]{64}\.txt")
_DECISION = re.compile(r"[0-9a-f]{64}\.decision\.json")
_MISSING = {"404", "NoSuchKey", "NotFound"}
_CONFLICT = {"PreconditionFailed", "ConditionalRequestConflict"}
# How S3-compatible servers without conditional writes refuse If-None-Match.
_NO_CONDITIONAL = {"NotImplemented", "InvalidArgument", "InvalidRequest"}
_CONTENT_TYPE = "text/plain; charset=utf-8"
# A call's deadline: two attempts of ``timeout``, the backoff between them, and this many
# seconds per MiB sent or read.
_BACKOFF_SECONDS = 1.0
_SECONDS_PER_MIB = 1.0


def require_boto3() -> Any:
    """The boto3 module, or an ImportError naming the extra to install."""
    try:
        import boto3
    except ImportError as exc:
        raise ImportError(_INSTALL) from exc
    return boto3


class _Missing(Exception):
    """The object does not exist."""


class _Exists(Exception):
    """A conditional write found the name taken (412, or 409: a write in progress)."""


class _NoConditional(Exception):
    """The server does not do conditional writes (it refused the header)."""


class _Abandoned(Exception):
    """Raised inside botocore before an attempt of a call whose caller gave up on it."""


class _Call:
    """One S3 call run in a thread of its own, and its outcome."""

    def __init__(self, method: Any, params: dict[str, Any], read: int | None, deadline: float):
        self.method = method
        self.params = params
        self.read = read
        self.deadline = deadline
        # The waiting thread's name, for whoever watches botocore's events (in the worker).
        self.origin = threading.current_thread().name
        self.done = threading.Event()
        self.abandoned = False
        self.value: Any = None
        self.error: BaseException | None = None

    def late(self) -> bool:
        return self.abandoned or time.monotonic() >= self.deadline

    def run(self) -> None:
        if self.late():
            return  # its caller has given up: never started, never sent
        _running.call = self
        try:
            value = self.method(**self.params)
            if self.read is not None:
                # The body too, within the deadline: a server can trickle it as well.
                body = value["Body"]
                value["Body"] = bytes(body.read() if self.read < 0 else body.read(self.read))
            self.value = value
        except BaseException as exc:  # handed to the caller, who raises it
            self.error = exc
        finally:
            _running.call = None
            self.done.set()


_running = threading.local()


def _refuse_late_attempt(**_: Any) -> None:
    """botocore's ``before-send``: no attempt (first or retry) of an abandoned call."""
    call: _Call | None = getattr(_running, "call", None)
    if call is not None and call.late():
        raise _Abandoned()


def _checksum(key: str) -> str:
    # S3's x-amz-checksum-sha256: base64 of the raw digest, which the key is in hex.
    return base64.b64encode(bytes.fromhex(key)).decode("ascii")


class S3ArtifactStore(ContentStore):
    """Artifacts as objects under ``s3://bucket/prefix``, with the standard AWS configuration
    (or ``client``, a boto3 S3 client). Last use is an object's ``LastModified``, refreshed
    by a server-side copy onto itself in the background.
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        client: Any = None,
        timeout: float = 2.0,
        **limits: Unpack[Limits],
    ) -> None:
        super().__init__(**limits)
        prefix = prefix.strip("/")
        self.bucket = bucket
        self.prefix = prefix + "/" if prefix else ""
        self.timeout = timeout
        self.ref_prefix = f"s3://{bucket}/{self.prefix}"
        self._given_client = client
        self._client: Any = client
        self._client_pid = os.getpid()
        self._client_lock = threading.Lock()
        self._down_until = 0.0
        # Whether the server does conditional writes (If-None-Match): until it refuses one.
        self._conditional = True
        # LastModified of artifacts just verified or read, so a fresh one needs no refresh.
        self._modified: dict[str, float] = {}

    def __repr__(self) -> str:
        return f"S3ArtifactStore({self.ref_prefix!r})"

    # -- references ----------------------------------------------------------------------

    @property
    def location(self) -> str:
        """``s3://bucket/prefix/``."""
        return self.ref_prefix

    # -- reading -------------------------------------------------------------------------

    def read_piece(
        self, key: str, start: int, end: int, version: Hashable | None = None
    ) -> tuple[bytes, int, Hashable]:
        """Bytes ``start`` to ``end`` (exclusive) of the artifact (fewer at its end), its
        size and its version (the ETag): one ranged GET, with ``If-Match`` the version."""
        if start < 0 or end < start:
            raise ValueError("a byte range is 0 <= start <= end")
        where: dict[str, Any] = {"Bucket": self.bucket, "Key": self._name(check_key(key))}
        if version is not None:
            where["IfMatch"] = version
        try:
            if end > start:
                try:
                    got = self._call(
                        "get_object",
                        read=-1,
                        transfer=end - start,
                        conditional=version is not None,
                        Range=f"bytes={start}-{end - 1}",
                        **where,
                    )
                except ArtifactStoreError as exc:
                    if "InvalidRange" not in str(exc):
                        raise
                else:
                    if version is None:
                        self._note_modified(key, got.get("LastModified"))
                    data: bytes = got["Body"]
                    # "bytes 0-99/1234": the object's size; a whole-object answer, its length.
                    total = str(got.get("ContentRange", "")).rpartition("/")[2]
                    size = int(total) if total.isdigit() else int(got["ContentLength"])
                    return data, size, str(got["ETag"])
            # Nothing to read (an empty range, or one at or past the end): its size.
            head = self._call("head_object", conditional=version is not None, **where)
        except _Missing:
            raise ArtifactNotFound("no such artifact in this store") from None
        except _Exists:
            raise ArtifactChanged("the artifact changed after it was verified") from None
        except _NoConditional:
            raise ArtifactStoreError(errno.EIO, "S3 read failed: If-Match refused") from None
        return b"", int(head["ContentLength"]), str(head["ETag"])

    # -- the client ----------------------------------------------------------------------

    def client(self) -> Any:
        """The boto3 S3 client (built on first use, and again in a forked child)."""
        if self._client is not None and self._client_pid == os.getpid():
            return self._client
        with self._client_lock:
            if self._client is None or self._client_pid != os.getpid():
                client = self._given_client or self._new_client()
                events = getattr(getattr(client, "meta", None), "events", None)
                if events is not None:  # a botocore client (a given one may be a stand-in)
                    events.register(
                        "before-send.s3", _refuse_late_attempt, unique_id="budgetware-deadline"
                    )
                self._client = client
                self._client_pid = os.getpid()
            return self._client

    def _new_client(self) -> Any:
        boto3 = require_boto3()
        from botocore.config import Config

        config = Config(
            connect_timeout=self.timeout,
            read_timeout=self.timeout,
            retries={"total_max_attempts": 2, "mode": "standard"},
            # Our own SHA-256 goes with every write: no second checksum.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        return boto3.session.Session().client("s3", config=config)

    def deadline(self, transfer: int = 0) -> float:
        """Seconds a call that sends or reads ``transfer`` bytes may take, at most."""
        return 2 * self.timeout + _BACKOFF_SECONDS + transfer / MIB * _SECONDS_PER_MIB

    def _call(
        self,
        operation: str,
        *,
        read: int | None = None,
        transfer: int | None = None,
        conditional: bool = False,
        **params: Any,
    ) -> Any:
        """One S3 call within its deadline: _Missing for a missing object, _Exists and
        _NoConditional for a ``conditional`` one, ArtifactStoreError for the rest.
        ``read`` reads the body too (-1: all of it); ``transfer``: bytes it moves."""
        if time.monotonic() < self._down_until:
            raise ArtifactStoreError(errno.EHOSTUNREACH, "S3 store skipped after a failure")
        from botocore.exceptions import BotoCoreError, ClientError

        client = self.client()  # built (once) outside the deadline
        if transfer is None:
            body = params.get("Body")
            transfer = len(body) if isinstance(body, bytes) else max(read or 0, 0)
        limit = self.deadline(transfer)
        call = _Call(getattr(client, operation), params, read, time.monotonic() + limit)
        # A daemon thread per call: one a server holds never holds up the interpreter's exit.
        threading.Thread(target=call.run, name="budgetware-s3", daemon=True).start()
        if not call.done.wait(limit):
            call.abandoned = True
            self._down_until = time.monotonic() + BREAKER_SECONDS
            raise ArtifactStoreError(
                errno.ETIMEDOUT, f"S3 {operation} failed: no answer within {limit:.1f} s"
            )
        if call.error is None:
            return call.value
        try:
            raise call.error
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            status = str(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
            if conditional:
                if status in {"412", "409"} or code in _CONFLICT:
                    raise _Exists() from None
                if status == "501" or code in _NO_CONDITIONAL or (status == "400" and not code):
                    raise _NoConditional() from None
            if code in _MISSING or status == "404":
                raise _Missing() from None
            if status.startswith("5") or code in {"SlowDown", "RequestTimeout"}:
                self._down_until = time.monotonic() + BREAKER_SECONDS
            raise ArtifactStoreError(errno.EIO, f"S3 {operation} failed: {code}") from None
        except BotoCoreError as exc:  # unreachable, timed out, no credentials
            self._down_until = time.monotonic() + BREAKER_SECONDS
            raise ArtifactStoreError(
                errno.EIO, f"S3 {operation} failed: {type(exc).__name__}"
            ) from None

    def _name(self, key: str, suffix: str = ".txt") -> str:
        return f"{self.prefix}{key}{suffix}"

    # -- backend primitives --------------------------------------------------------------

    def _probe(self, key: str) -> Probe:
        try:
            head = self._call(
                "head_object", Bucket=self.bucket, Key=self._name(key), ChecksumMode="ENABLED"
            )
        except _Missing:
            return "absent"
        if head.get("ChecksumSHA256") != _checksum(key):
            return "false"
        self._note_modified(key, head.get("LastModified"))
        return "verified"

    def _note_modified(self, key: str, modified: Any) -> None:
        if modified is not None:
            with self._lock:
                self._modified[key] = modified.timestamp()
                if len(self._modified) > CACHE_ENTRIES:
                    self._modified.clear()

    def _probe_for_write(self, key: str) -> Probe:
        # A conditional PUT finds out itself whether the name is taken.
        return "absent" if self._conditional else self._probe(key)

    def _put_object(
        self, name: str, data: bytes, checksum: str, *, if_absent: bool = False
    ) -> None:
        params: dict[str, Any] = {
            "Bucket": self.bucket,
            "Key": name,
            "Body": data,
            "ContentType": _CONTENT_TYPE,
            "ChecksumAlgorithm": "SHA256",
            "ChecksumSHA256": checksum,
        }
        if if_absent:
            params["IfNoneMatch"] = "*"
        try:
            answer = self._call("put_object", conditional=if_absent, **params)
        except _Missing:  # no such bucket
            raise ArtifactStoreError(errno.ENOENT, "S3 put_object failed: no bucket") from None
        if not answer.get("ETag"):
            # botocore takes a bare 200 (a broken proxy) for success.
            raise ArtifactStoreError(errno.EIO, "S3 put_object failed: not confirmed")

    def _write(self, key: str, data: bytes, *, replace: bool) -> bool:
        name, checksum = self._name(key), _checksum(key)
        if not replace and self._conditional:
            try:
                self._put_object(name, data, checksum, if_absent=True)
                return True
            except _Exists:  # another writer got there: look at what it wrote
                pass
            except _NoConditional:
                self._conditional = False  # this server: HEAD + PUT from now on
            if self._probe(key) == "verified":
                self._refresh(key)  # reuse counts as use
                return False
        self._put_object(name, data, checksum)
        return True

    def _refresh(self, key: str) -> bool:
        with self._lock:
            modified = self._modified.pop(key, None)
        if modified is not None and time.time() - modified < self._refresh_every:
            return True  # just verified, and used recently enough
        sweeper.submit("refresh the last use of an S3 artifact", lambda: self._touch(key))
        return True

    def _touch(self, key: str) -> None:
        """Set LastModified to now: a server-side copy of the object onto itself."""
        name = self._name(key)
        try:
            self._call(
                "copy_object",
                Bucket=self.bucket,
                Key=name,
                CopySource={"Bucket": self.bucket, "Key": name},
                MetadataDirective="REPLACE",
                ContentType=_CONTENT_TYPE,
                Metadata={"budgetware-used": str(int(time.time()))},
                ChecksumAlgorithm="SHA256",
            )
        except _Missing:
            self.forget(key)  # deleted since: the next put writes it again

    def _read_record(self, name: str) -> bytes | None:
        try:
            got = self._call("get_object", read=MIB, Bucket=self.bucket, Key=self.prefix + name)
        except _Missing:
            return None
        record: bytes = got["Body"]
        return record

    def _write_record(self, name: str, data: bytes, *, replace: bool) -> None:
        digest = base64.b64encode(hashlib.sha256(data).digest()).decode("ascii")
        self._put_object(self.prefix + name, data, digest)

    def _scan(self) -> Listing:
        listing = Listing()
        token: str | None = None
        while True:
            params: dict[str, Any] = {"Bucket": self.bucket, "Prefix": self.prefix}
            if token:
                params["ContinuationToken"] = token
            try:
                page = self._call("list_objects_v2", **params)
            except _Missing:
                return listing  # no such bucket: nothing stored yet
            for item in page.get("Contents", ()):
                name = str(item["Key"])[len(self.prefix) :]
                if _ARTIFACT.fullmatch(name):
                    into = listing.artifacts
                elif _DECISION.fullmatch(name):
                    into = listing.decisions
                else:
                    continue
                into.append(Entry(name, int(item["Size"]), item["LastModified"].timestamp()))
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return listing
            sweeper.check_stopping()
            give_way()  # hand the GIL to request threads between pages

    def _delete(self, names: list[str]) -> None:
        for start in range(0, len(names), 1000):  # DeleteObjects takes 1,000 at most
            if sweeper.stopping():
                return
            batch = [{"Key": self.prefix + name} for name in names[start : start + 1000]]
            try:
                self._call(
                    "delete_objects",
                    Bucket=self.bucket,
                    Delete={"Objects": batch, "Quiet": True},
                )
            except _Missing:
                return
