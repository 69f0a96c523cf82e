"""Per-SDK integrations of budgetware, each importing its client library lazily."""
