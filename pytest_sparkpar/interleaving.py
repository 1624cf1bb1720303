"""One permuted interleaving: which rows arrive, in what order, in which partition and
micro-batch, and under which shuffle configuration.

The same drawing code serves two choosers: a seeded `random.Random` for the fast threaded search,
and hypothesis's `data.draw` for strategy inputs and for shrinking a failure (hypothesis shrinks
permutations towards the identity and counts towards their minimum).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from pytest_sparkpar.orders import Bag, OrderType, PerKey, Sequence

SHUFFLE_PARTITIONS = (1, 2, 3, 4, 5, 7, 8)
MAX_INPUT_PARTITIONS = 8
MAX_BATCHES = 4


@dataclass(frozen=True)
class Placement:
    """Where one input's rows go: `order[j]` is the row index emitted j-th, into partition
    `partition_of[j]`, in micro-batch `batch_of[j]` (all 0 for batch runs)."""

    order: tuple[int, ...]
    partitions: int
    partition_of: tuple[int, ...]
    batch_of: tuple[int, ...]

    @property
    def batches(self) -> int:
        return max(self.batch_of, default=0) + 1

    def describe(self, limit: int = 30) -> str:
        def clip(seq: tuple[int, ...]) -> str:
            text = ", ".join(map(str, seq[:limit]))
            return f"[{text}{', …' if len(seq) > limit else ''}]"

        text = f"{len(self.order)} rows in order {clip(self.order)}; {self.partitions} input partition(s), partition of each {clip(self.partition_of)}"
        if self.batches > 1:
            sizes = [self.batch_of.count(b) for b in range(self.batches)]
            text += f"; {self.batches} micro-batches of {sizes} rows"
        return text


@dataclass(frozen=True)
class Interleaving:
    placements: dict[str, Placement]
    shuffle_partitions: int
    adaptive: bool
    label: str = "permuted"
    kept: dict[str, tuple[int, ...]] | None = field(default=None, compare=False)

    def confs(self) -> dict[str, str]:
        return {
            "spark.sql.shuffle.partitions": str(self.shuffle_partitions),
            "spark.sql.adaptive.enabled": str(self.adaptive).lower(),
        }

    def key(self) -> tuple:
        return (tuple(sorted(self.placements.items())), self.shuffle_partitions, self.adaptive)


def sequential(sizes: dict[str, int]) -> Interleaving:
    """The sequential semantics: one partition, original order, one shuffle partition, one batch."""
    placements = {name: Placement(tuple(range(n)), 1, (0,) * n, (0,) * n) for name, n in sizes.items()}
    return Interleaving(placements, shuffle_partitions=1, adaptive=False, label="sequential")


class RandomChooser:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def boolean(self, p_true: float) -> bool:
        return self.rng.random() < p_true

    def permutation(self, n: int) -> list[int]:
        order = list(range(n))
        self.rng.shuffle(order)
        return order

    def sample(self, options: tuple) -> Any:
        return self.rng.choice(options)


class HypothesisChooser:
    def __init__(self, data: Any):
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def integer(self, lo: int, hi: int) -> int:
        return self.data.draw(self.st.integers(lo, hi))

    def boolean(self, p_true: float) -> bool:
        # Shrinks towards False, which is the "less exotic" choice in every use below.
        return self.data.draw(self.st.integers(0, 99)) >= 100 - int(p_true * 100)

    def permutation(self, n: int) -> list[int]:
        return list(self.data.draw(self.st.permutations(range(n))))

    def sample(self, options: tuple) -> Any:
        return self.data.draw(self.st.sampled_from(options))


def _arrival_order(chooser, rows: list[tuple], columns: list[str], order: OrderType) -> list[int]:
    n = len(rows)
    if isinstance(order, Sequence) or n < 2:
        return list(range(n))
    shuffled = chooser.permutation(n)
    if isinstance(order, Bag):
        return shuffled
    # per_key: the keys take the slots a free permutation gives them, each key's rows in order.
    keys = _key_values(rows, columns, order)
    queues: dict[Any, list[int]] = {}
    for i, k in enumerate(keys):
        queues.setdefault(k, []).append(i)
    return [queues[keys[i]].pop(0) for i in shuffled]


def _key_values(rows: list[tuple], columns: list[str], order: PerKey) -> list[Any]:
    index = [columns.index(k) for k in order.key]
    return [tuple(r[i] for i in index) for r in rows]


def _partition_of(chooser, rows, columns, order: OrderType, arrival: list[int], parts: int) -> list[int]:
    n = len(arrival)
    if parts == 1 or n == 0:
        return [0] * n
    if isinstance(order, Sequence):
        # Contiguous runs, so partition index then position still spells the total order.
        cuts = sorted(chooser.integer(0, n) for _ in range(parts - 1))
        return [sum(1 for c in cuts if c <= j) for j in range(n)]
    if isinstance(order, PerKey):
        # A key lives in one partition (like a keyed Kafka topic), so its order survives.
        keys = _key_values(rows, columns, order)
        home: dict[Any, int] = {}
        for i in arrival:
            if keys[i] not in home:
                home[keys[i]] = chooser.integer(0, parts - 1)
        return [home[keys[i]] for i in arrival]
    return [chooser.integer(0, parts - 1) for _ in range(n)]


def _batch_of(chooser, n: int, streaming: bool, batches: int) -> list[int]:
    if not streaming or batches == 1 or n == 0:
        return [0] * n
    cuts = sorted(chooser.integer(1, max(1, n - 1)) for _ in range(batches - 1))
    return [sum(1 for c in cuts if c <= j) for j in range(n)]


def _partition_count(chooser, rows: int, default_parallelism: int | None) -> int:
    top = max(1, min(MAX_INPUT_PARTITIONS, rows))
    # An input split into exactly the default parallelism is common, and it is the one split where
    # a later shuffle of the default size meets a partitioner of the same size and is skipped (a
    # partitioner wrongly kept, SPX301, shows only then): a quarter of the draws take it.
    if default_parallelism is not None and 1 < default_parallelism <= top and chooser.boolean(0.25):
        return default_parallelism
    return chooser.integer(1, top)


def draw(
    chooser,
    inputs: dict[str, tuple[list[tuple], list[str], OrderType]],
    streaming: bool,
    default_parallelism: int | None = None,
) -> Interleaving:
    """Draw one permuted interleaving of `inputs` (name -> rows, column names, input order)."""
    placements = {}
    batches = chooser.integer(1, MAX_BATCHES) if streaming else 1
    for name, (rows, columns, order) in inputs.items():
        arrival = _arrival_order(chooser, rows, columns, order)
        parts = _partition_count(chooser, len(rows), default_parallelism)
        partition_of = _partition_of(chooser, rows, columns, order, arrival, parts)
        batch_of = _batch_of(chooser, len(rows), streaming, batches)
        placements[name] = Placement(tuple(arrival), parts, tuple(partition_of), tuple(batch_of))
    # Adaptive execution coalesces small shuffles into one partition and hides most bugs, so it
    # is on in only a quarter of the runs.
    adaptive = chooser.boolean(0.25)
    shuffle_partitions = chooser.sample(SHUFFLE_PARTITIONS[1:] if not adaptive else SHUFFLE_PARTITIONS)
    return Interleaving(placements, shuffle_partitions, adaptive)
