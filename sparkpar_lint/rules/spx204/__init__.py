"""SPX204 stateful-stream-without-watermark: streaming state with no event-time pulse upstream.

A package, as its fixes and the state judgement it shares with SPX206 outweigh the rule: `rule.py`
holds the rule with its examples, `problems.py` the streaming state nothing lets Spark drop (what
SPX204 and SPX206 report), `state.py` what a stateful stage keeps, `join_range.py` whether a
stream-stream join bounds its event times, `messages.py` the findings' text and `fix.py` the fixes
a finding carries."""

from sparkpar_lint.rules.spx204.rule import StatefulStreamWithoutWatermark

__all__ = ["StatefulStreamWithoutWatermark"]
