"""The ``budgetware`` command line: the entry point and one module per command."""
