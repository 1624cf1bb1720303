"""SPX101 order-dependent-aggregate: `first`, `collect_list`, ... in an aggregation after a shuffle.

A package, as its fixes outweigh the rule: `rule.py` holds the rule with its examples,
`aggregates.py` which aggregates read the arrival order and where it cannot matter, `fix.py` the
fixes a finding carries."""

from sparkpar_lint.rules.spx101.rule import OrderDependentAggregate

__all__ = ["OrderDependentAggregate"]
