"""The HTTP layer: transports and ``instrument()`` for httpx and httpx2, request headers,
the response-hook registry."""
