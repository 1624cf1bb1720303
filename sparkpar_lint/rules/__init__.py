"""Rule registry: every module in this package named spxNNN_*.py defines one rule, as does every
package named spxNNN (a rule whose fixes outweigh it: `spx101/`)."""

from __future__ import annotations

import importlib
import pkgutil

from sparkpar_lint.rules.base import Rule


def all_rules() -> list[type[Rule]]:
    for module in pkgutil.iter_modules(__path__):
        if module.name.startswith("spx"):
            importlib.import_module(f"{__name__}.{module.name}")
    return [Rule.registry[rule_id] for rule_id in sorted(Rule.registry)]
