"""Reading artifacts back: a window of characters, or the lines matching a pattern."""
