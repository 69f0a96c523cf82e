"""``budgetware run``'s start-up hook: the folder put first on the child's ``PYTHONPATH``.

It holds only ``sitecustomize.py`` (Python imports it at start-up, before the program's
first line) and this file, so that it ships as a package; nothing else here can shadow a
module of the program.
"""
