"""anthropic integration."""
