"""Library calls that return the DataFrame they are given, rows unchanged (rules/passthrough.toml).

`df = collectMetrics(spark, df, ...)` between two steps of a generated pipeline would otherwise
cut the chain: the frame after it would be of unknown origin, and whatever the analysis knew of
its rows (read from storage, unique on a key) would be lost.
"""

from __future__ import annotations

import functools
import importlib.resources
import tomllib


@functools.cache
def passthrough_functions() -> dict[str, int]:
    """Dotted name → position of the DataFrame argument handed back."""
    text = (importlib.resources.files("sparkpar_lint.ruledata") / "passthrough.toml").read_text(encoding="utf-8")
    return {name: int(entry["frame"]) for name, entry in tomllib.loads(text).items()}


def star_passthrough(star_modules: list[str], name: str) -> str | None:
    """The dotted name a bare `name` has when one of the star-imported modules defines it here."""
    known = passthrough_functions()
    return next((f"{module}.{name}" for module in star_modules if f"{module}.{name}" in known), None)
