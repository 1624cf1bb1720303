"""Data-trace order types: what an input source guarantees and how outputs are compared.

`bag()` is unordered (U), `per_key(K, by)` is ordered within each key (O(K)), `sequence()` is a
total order. An input type says which reorderings a permuted run may apply; an output type says
which differences between two outputs are real.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Bag:
    """Unordered: any permutation and any partitioning of the rows is a valid arrival."""

    def describe(self) -> str:
        return "bag()"


@dataclass(frozen=True)
class PerKey:
    """Ordered within each key: keys interleave freely, each key's rows keep their order."""

    key: tuple[str, ...]
    by: tuple[str, ...] | None = None

    def describe(self) -> str:
        by = f", by={list(self.by)!r}" if self.by else ""
        return f"per_key({list(self.key)!r}{by})"


@dataclass(frozen=True)
class Sequence:
    """Totally ordered: rows arrive in their given order, split into contiguous partitions."""

    def describe(self) -> str:
        return "sequence()"


OrderType = Bag | PerKey | Sequence


def _names(value: str | list[str] | tuple[str, ...] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return (value,) if isinstance(value, str) else tuple(value)


def bag() -> Bag:
    return Bag()


def per_key(key: str | list[str], by: str | list[str] | None = None) -> PerKey:
    return PerKey((key,) if isinstance(key, str) else tuple(key), _names(by))


def sequence() -> Sequence:
    return Sequence()


# ---------------------------------------------------------------------------------------------
# Comparing outputs


def plain(value: Any) -> Any:
    """Spark Rows (and nested Rows, lists, dicts) as plain tuples, lists and dicts."""
    if isinstance(value, tuple):  # pyspark Row is a tuple subclass
        return tuple(plain(v) for v in value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def _sort_key(row: Any) -> str:
    # Only used to line two outputs up; equal values must give equal keys, nothing more.
    return repr(row)


def values_equal(a: Any, b: Any, tolerance: float | None) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        if tolerance is None:
            return a == b
        return math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(values_equal(x, y, tolerance) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k], tolerance) for k in a)
    return a == b


@dataclass(frozen=True)
class Canonical:
    """An output brought to the form its order type compares: groups of rows in a fixed order."""

    groups: dict[Any, list[tuple]]  # key -> rows; a bag or sequence has the single key None


def canonical(rows: list[tuple], columns: list[str], order: OrderType) -> Canonical:
    if isinstance(order, Sequence):
        return Canonical({None: list(rows)})
    if isinstance(order, Bag):
        return Canonical({None: sorted(rows, key=_sort_key)})
    key_index = [columns.index(k) for k in order.key]
    groups: dict[Any, list[tuple]] = defaultdict(list)
    for row in rows:
        groups[tuple(row[i] for i in key_index)].append(row)
    if order.by:
        by_index = [columns.index(c) for c in order.by]
        for key, group in groups.items():
            # Ties on `by` have no defined order, so they compare as a multiset.
            groups[key] = sorted(group, key=lambda r: (repr(tuple(r[i] for i in by_index)), _sort_key(r)))
    return Canonical(dict(groups))


def differing_groups(a: Canonical, b: Canonical, tolerance: float | None) -> list[Any]:
    """Keys whose rows differ (a bag or sequence has the one key None)."""
    keys = sorted(set(a.groups) | set(b.groups), key=repr)
    return [k for k in keys if not values_equal(a.groups.get(k, []), b.groups.get(k, []), tolerance)]
