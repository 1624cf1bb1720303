"""How many distinct values a key can take over the life of a streaming query, read from its
column names: an event time or an event-time window (grows, but a watermark can retire it), an id
or other per-entity column (grows for ever), a small label (bounded), or unknown.

Names are all a linter sees; the classes are deliberately conservative: a column is a label only
when its name says so (`country`, `status`, `event_type`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

EVENT_TIME = "event-time"
ENTITY = "entity"
LABEL = "label"
UNKNOWN = "unknown"

_TIME = re.compile(
    r"(^|_)(ts|time|timestamp|date|datetime|hour|minute|day|week|month|year)($|_)|time|_at$|[a-z](Time|Date|Ts)$",
    re.IGNORECASE,
)
# Entity names are tested before labels: `user_type` is a label, `user_id` an entity.
_LABEL = re.compile(
    r"(^|_)(type|types|kind|status|state|category|class|level|country|countrycode|region|continent|currency|"
    r"lang|language|locale|action|activity|channel|platform|os|browser|gender|tier|segment|sentiment|"
    r"label|flag|severity|priority|mode|stage|topic|method|weekday|bucket|group)$|[a-z](Type|Status|Category|Kind)$",
    re.IGNORECASE,
)
_ENTITY = re.compile(
    r"(^|_)(id|ids|key|uuid|guid|sk|hash|token|user|users|username|session|device|account|customer|client|"
    r"order|transaction|txn|event|message|msg|request|ip|email|url|uri|path|phone|visitor|player|host|"
    r"file|filename|hashtag|sku|product|item|card|address|name|title|query)$|[a-z]Id$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class KeySpace:
    kind: str  # EVENT_TIME | ENTITY | LABEL | UNKNOWN
    column: str | None = None  # the column that decided it
    window: bool = False  # the event time is a `window(...)`/`session_window(...)` of the column

    @property
    def grows(self) -> bool:
        return self.kind in (EVENT_TIME, ENTITY)


def column_kind(name: str) -> str:
    leaf = name.rsplit(".", 1)[-1].strip("`")
    if _TIME.search(leaf):
        return EVENT_TIME
    if _LABEL.search(leaf):
        return LABEL
    if _ENTITY.search(leaf):
        return ENTITY
    return UNKNOWN


def key_space(keys: tuple[str, ...], window_column: str | None = None) -> KeySpace:
    """The key space of a grouping or deduplication by `keys` (column names)."""
    if window_column is not None:
        return KeySpace(EVENT_TIME, window_column, window=True)
    kinds = [(column_kind(k), k) for k in keys]
    for wanted in (EVENT_TIME, ENTITY, UNKNOWN):
        found = next((k for kind, k in kinds if kind == wanted), None)
        if found is not None:
            return KeySpace(wanted, found)
    if kinds:
        return KeySpace(LABEL, kinds[0][1])
    return KeySpace(UNKNOWN)


def bounded_by_derivation(graph, node, column: str) -> bool:
    """The column is made upstream as a remainder (`value % 100`, `pmod`) or a constant: whatever
    its name, it takes a fixed, small set of values."""
    for upstream in graph.upstream(node):
        call = upstream.call
        if upstream.method != "withColumn" or call is None or len(call.args) < 2:
            continue
        name = call.args[0].value
        if not (isinstance(name, cst.SimpleString) and name.evaluated_value == column):
            continue
        text = cst.Module([]).code_for_node(call.args[1].value)
        return bool(_BOUNDED_EXPRESSION.search(text))
    return False


_BOUNDED_EXPRESSION = re.compile(r"%|\bpmod\(|^(F\.|functions\.)?lit\(")


# Generators and splitters that turn free text into keys: every new word is a new key.
_TEXT_FUNCTIONS = frozenset({"explode", "explode_outer", "split", "regexp_extract", "regexp_extract_all", "sentences"})
_TEXT_NAMES = frozenset({"value", "word", "words", "text", "token", "tokens", "line", "lines"})


def free_text(graph, node, column: str) -> bool:
    """The key is free text: the raw `value` of a text/socket/Kafka source, or a word split out of
    text (`explode(split(value, " "))`); its key space grows with the vocabulary."""
    if column in _TEXT_NAMES:
        return True
    for upstream in graph.upstream(node):
        if upstream.method not in ("select", "withColumn") or upstream.call is None:
            continue
        text = cst.Module([]).code_for_node(upstream.call)
        if column in text and any(c.function in _TEXT_FUNCTIONS for c in upstream.columns.calls):
            return True
    return False
