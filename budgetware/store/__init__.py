"""Artifact stores: the local content-addressed directory, private files, lifecycle."""
