"""One module per provider request format: where its tool results are, and what a batch is."""
