"""Privacy-safe boundary diagnostics: events, values per boundary, the log, the recorder."""
