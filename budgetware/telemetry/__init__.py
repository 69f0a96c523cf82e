"""Reporting what budgetware did to observability systems (OpenTelemetry), from the
observation seam (``core/observe.py``). Sizes and counts only, never content or paths."""
