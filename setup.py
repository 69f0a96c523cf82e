"""Package discovery (metadata is in pyproject.toml): every package under budgetware/, and
every package under integrations/ shipped as budgetware.integrations (docs/packaging.md).

Nothing is listed by hand, so a new module or folder ships without a config change.
"""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["budgetware", "budgetware.*"]),
        "budgetware.integrations",
        *(f"budgetware.integrations.{name}" for name in find_packages("integrations")),
    ],
    package_dir={"budgetware.integrations": "integrations"},
)
