"""The suite's test kit: drivers of the real client libraries (``drivers``), a real LiteLLM
Proxy process (``litellm_proxy``, warm starts in ``litellm_forkserver``) and a local S3
server (``s3``); and their tests. Benchmarks and scripts import it with ``tests/`` on
``sys.path``."""
