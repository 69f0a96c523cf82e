"""Tests that drive the real client libraries against the local fake provider."""
