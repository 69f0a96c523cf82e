"""Recognizing signed requests (AWS SigV4), whose body and signed headers must not change."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl, urlsplit

__all__ = ["signed_header_names"]

# Any of these means SigV4-signed, even without an Authorization header.
_SIGV4_HEADERS = ("x-amz-date", "x-amz-content-sha256", "x-amz-security-token")


def signed_header_names(headers: Mapping[str, str], url: str) -> frozenset[str] | None:
    """The header names a SigV4 signature covers (lower-cased; empty: unknown), or None when
    unsigned. ``headers`` must look names up case-insensitively."""
    authorization = headers.get("authorization", "")
    if authorization.lstrip()[:5].upper() == "AWS4-":
        for part in authorization.split(","):
            key, _, value = part.strip().rpartition(" ")[2].partition("=")
            if key == "SignedHeaders":
                return frozenset(value.lower().split(";"))
        return frozenset()
    if any(name in headers for name in _SIGV4_HEADERS):
        return frozenset()
    query = urlsplit(url).query
    if "X-Amz-Signature" in query:
        signed = dict(parse_qsl(query)).get("X-Amz-SignedHeaders", "")
        return frozenset(signed.lower().split(";"))
    return None
