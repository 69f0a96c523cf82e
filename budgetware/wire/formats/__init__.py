"""A module per provider request format (``chat``: the chat-style ones): where its tool
results are, and what a batch is."""
