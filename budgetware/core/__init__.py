"""The pure core: measuring, allocating, fitting, the finalizer and guard, configuration.
No HTTP, no clock, no file I/O but through an ``ArtifactStore``; imports no other layer."""
