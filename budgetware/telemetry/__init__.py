"""Reporting what budgetware did to OpenTelemetry: sizes and counts, never content or paths."""
