"""The wire layer: provider request formats, finding tool results in a body, splicing
bounded text back, and ``finalize_body``. Knows bytes and JSON, not HTTP libraries."""
