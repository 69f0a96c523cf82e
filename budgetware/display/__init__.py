"""Display projection: bounded copies of tool output for editors (ACP) and log consumers."""
