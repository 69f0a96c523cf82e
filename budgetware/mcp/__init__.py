"""The MCP producer boundary: ``tools/call`` results bounded where they enter the agent."""
