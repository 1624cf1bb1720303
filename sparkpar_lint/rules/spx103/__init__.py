"""SPX103 order-dependent-group-function: a grouped or per-partition function that reads its rows
by position or in sequence without sorting them first.

A package, as its fixes outweigh the rule's check: `rule.py` holds the rule with its examples and
`check`, `parameters.py` what the judged function's parameters hold (nothing when its rows carry no
order), `messages.py` what the findings say, `fix.py` the fixes a finding carries (a sort at the
top of the function, a lambda reading its frame sorted, rows released on watermark pulses, a
grouped list sorted)."""

from sparkpar_lint.rules.spx103.rule import OrderDependentGroupFunction

__all__ = ["OrderDependentGroupFunction"]
