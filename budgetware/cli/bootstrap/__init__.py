"""``budgetware run``'s start-up hook, first on the child's ``PYTHONPATH``: it holds only
``sitecustomize.py``, so nothing here can shadow a module of the program."""
