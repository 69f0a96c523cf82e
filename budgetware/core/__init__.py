"""The pure core: measuring, allocating, fitting, the finalizer and guard, configuration.

No HTTP library, no clock, no file I/O except through the ``ArtifactStore`` protocol
passed in. Imports nothing else of budgetware.
"""
