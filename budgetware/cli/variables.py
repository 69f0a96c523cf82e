"""The names ``budgetware run`` and its start-up hook share. Imports nothing: the command
and the hook in every Python process it starts read them at start-up."""

OPTIONS_VARIABLE = "BUDGETWARE_RUN_OPTIONS"
"""The settings given as options to ``budgetware run`` (comma-separated field names)."""
VALIDATED_VARIABLE = "BUDGETWARE_RUN_CHECKED"
"""The settings (as one string) a process already checked, for the processes it starts."""
MAIN_VARIABLE = "BUDGETWARE_RUN_MAIN"
"""The process id of the program ``budgetware run`` started (POSIX: the command's own, after
``exec``)."""
OWN_VARIABLES = (OPTIONS_VARIABLE, VALIDATED_VARIABLE, MAIN_VARIABLE)

BOOLEAN_SETTINGS = frozenset(
    {
        "persist",
        "preview_json",
        "preview_tool_hint",
        "raise_errors",
        "sniff_unknown_endpoints",
        "telemetry",
    }
)
"""The settings (``BudgetConfig`` fields) that are booleans: ``--persist`` alone turns one on
and never takes the next word as its value (a test keeps this equal to the model)."""
