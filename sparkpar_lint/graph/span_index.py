"""Stages by where their spans lie, for finding the stage a finding's span is about without
scanning every stage per finding: with a finding per line, a scan made a long module quadratic,
and one `spark.sql` string of thousands of `UNION ALL`s puts thousands of stages on one line."""

from __future__ import annotations

import bisect
from collections.abc import Callable
from itertools import accumulate

from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import Span

# A node over more lines than this is not indexed line by line; one over more columns than this
# on its line is not indexed by column. Both kinds are few, and always looked at.
WIDE_LINES = 50
WIDE_COLUMNS = 200


class SpanIndex:
    """Built once per graph (`StageGraph.derived`); every answer is in creation order, as a scan
    of `graph.nodes` gives it."""

    def __init__(self, graph: StageGraph):
        self.nodes = graph.nodes
        self.by_line: dict[int, list[int]] = {}  # line -> nodes covering it (not over WIDE_LINES)
        self.tall: list[int] = []
        self.broad: dict[int, list[int]] = {}  # line -> nodes on it over many columns or lines
        starts: dict[int, list[tuple[int, int]]] = {}  # line -> (first column, id) of nodes starting there
        for node in graph.nodes:
            where = node.span
            starts.setdefault(where.line, []).append((where.column, node.id))
            if where.end_line - where.line > WIDE_LINES:
                self.tall.append(node.id)
                continue
            for covered in range(where.line, where.end_line + 1):
                self.by_line.setdefault(covered, []).append(node.id)
                if where.end_line > where.line or where.end_column - where.column > WIDE_COLUMNS:
                    self.broad.setdefault(covered, []).append(node.id)
        self.starts: dict[int, tuple[list[int], list[int], list[int]]] = {}
        for line, found in starts.items():
            found.sort()
            ids = [i for _, i in found]
            # The running maximum of the ids: the last-created node starting left of a column.
            self.starts[line] = ([c for c, _ in found], ids, list(accumulate(ids, max)))

    def overlapping(self, line: int, end_line: int) -> list[StageNode]:
        """The nodes whose span shares a line with `line`..`end_line`."""
        if end_line - line > WIDE_LINES:
            return [n for n in self.nodes if n.span.line <= end_line and n.span.end_line >= line]
        ids = set(self.tall)
        for covered in range(line, end_line + 1):
            ids.update(self.by_line.get(covered, ()))
        return self._kept(ids, lambda n: n.span.line <= end_line and n.span.end_line >= line)

    def near(self, span: Span) -> list[StageNode]:
        """The overlapping nodes that may hold the start of `span` or start inside it: on a
        one-line span, those starting on its line at most WIDE_COLUMNS before it, and the broad
        ones (a narrower node starting further left ends before the span starts)."""
        if span.end_line != span.line:
            return self.overlapping(span.line, span.end_line)
        ids = set(self.tall) | set(self.broad.get(span.line, ()))
        columns, starting, _ = self.starts.get(span.line, ([], [], []))
        low = bisect.bisect_left(columns, span.column - WIDE_COLUMNS)
        high = bisect.bisect_right(columns, span.end_column)
        ids.update(starting[low:high])
        return self._kept(ids, lambda n: n.span.line <= span.line <= n.span.end_line)

    def last_starting_before(self, line: int, column: int) -> StageNode | None:
        """The last-created node that starts on `line` left of `column`."""
        columns, _, latest = self.starts.get(line, ([], [], []))
        before = bisect.bisect_left(columns, column)
        return self.nodes[latest[before - 1]] if before else None

    def _kept(self, ids: set[int], keep: Callable[[StageNode], bool]) -> list[StageNode]:
        return [self.nodes[i] for i in sorted(ids) if keep(self.nodes[i])]
