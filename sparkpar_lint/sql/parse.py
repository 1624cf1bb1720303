"""Spark SQL parsed by sqlglot, with the places of the clause keywords the tree does not record.

sqlglot keeps the position of names (tables, columns, functions) but not of `ORDER BY`, `LIMIT`,
`GROUP BY` or `DISTINCT`; those are found among the tokens of the same query level (parenthesis
depth), after that query's own `SELECT`.
"""

from __future__ import annotations

import bisect
import logging
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.dialects.databricks import Databricks
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import Token, TokenType

# sqlglot logs a warning for statements it keeps as opaque commands (ALTER ... SET TAGS); a
# linter reading user strings must not print them.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

_SET_OPERATIONS = frozenset({TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT})
# Databricks SQL templates sqlglot cannot read: `IDENTIFIER(:catalog || '.' || :schema)` names and
# `${widget}` text. For parsing only, each becomes an identifier of its own length, so offsets stay.
_TEMPLATE = re.compile(r"\$\{[^}\n]*\}|\bIDENTIFIER\s*\((?:[^()'\n]|'[^'\n]*')*\)", re.IGNORECASE)


@dataclass
class ParsedSql:
    text: str  # the SQL as written (spans and fixes use it; the parse may have read a masked copy)
    statements: list[exp.Expr]
    tokens: list[Token]
    depths: list[int]
    # False when templates were masked for the parse: names in the tree may be placeholders, so
    # no fix may build SQL from them.
    rewritable: bool = True

    def name_range(self, node: exp.Expr) -> tuple[int, int] | None:
        """Offsets of a name sqlglot located (identifier, function name), end exclusive."""
        meta = node.meta
        if "start" in meta and "end" in meta:
            return meta["start"], meta["end"] + 1
        return None

    def clause(self, query: exp.Expr, kind: TokenType) -> tuple[int, int] | None:
        """Offsets of the `kind` keyword (ORDER BY, LIMIT, ...) belonging to `query` itself."""
        select = self.select_token(query)
        if select is None:
            return None
        depth = self.depths[select]
        for index in range(select + 1, len(self.tokens)):
            token = self.tokens[index]
            if self.depths[index] < depth:
                return None
            if self.depths[index] == depth:
                if token.token_type == kind:
                    return token.start, token.end + 1
                if token.token_type in _SET_OPERATIONS and not isinstance(query, exp.SetOperation):
                    return None
        return None

    def call_range(self, node: exp.Expr) -> tuple[int, int] | None:
        """From a function's name to its closing parenthesis."""
        name = self.name_range(node)
        if name is None:
            return None
        depth = 0
        for index in range(self._first_token_from(name[0]), len(self.tokens)):
            token = self.tokens[index]
            if token.token_type == TokenType.L_PAREN:
                depth += 1
            elif token.token_type == TokenType.R_PAREN:
                depth -= 1
                if depth == 0:
                    return name[0], token.end + 1
        return name

    @cached_property
    def _token_starts(self) -> list[int]:
        return [token.start for token in self.tokens]

    def _first_token_from(self, offset: int) -> int:
        """Index of the first token starting at or after `offset` (a bisection: a query of
        thousands of UNION ALLs asks once per finding, and a scan each time was quadratic)."""
        return bisect.bisect_left(self._token_starts, offset)

    def select_token(self, query: exp.Expr) -> int | None:
        if isinstance(query, exp.SetOperation):
            return self.select_token(query.expression)
        anchor = _first_own_name(query)
        if anchor is None:
            return None
        at = self._first_token_from(anchor)
        if at == len(self.tokens):
            return None
        depth = self.depths[at]
        for index in range(at, -1, -1):
            if self.tokens[index].token_type == TokenType.SELECT and self.depths[index] == depth:
                return index
        return None


@lru_cache(maxsize=2)
def parse(text: str) -> ParsedSql | None:
    """None for SQL sqlglot cannot read (a template, another dialect): no finding, no crash.
    Templates are masked, and a statement that still does not parse is left out (blanked), so
    one templated `CREATE TABLE` does not hide the queries beside it. The last texts are kept:
    a `spark.sql` string is read as a query and again for column calls, and a generated query
    or `.sql` file read twice cost twice its parse."""
    source = _TEMPLATE.sub(lambda m: "_" * len(m.group(0)), text)
    spark = Spark()
    try:
        tokens = spark.tokenize(source)
        depths = _depths(tokens)
        try:
            # The tokens already read: a second tokenizing was a third of the parse.
            statements = spark.parser().parse(tokens, source)
        except Exception:  # noqa: BLE001 - sqlglot raises several error types; try statement by statement
            read = _databricks(source)
            if read is not None:
                tokens, statements = read
                depths = _depths(tokens)
            else:
                source = _readable_statements(source, tokens, depths)
                if not source.strip():
                    return None
                tokens = spark.tokenize(source)
                depths = _depths(tokens)
                statements = spark.parser().parse(tokens, source)
    except Exception:  # noqa: BLE001 - unreadable SQL is skipped
        return None
    return ParsedSql(text, [s for s in statements if s is not None], tokens, depths, rewritable=source == text)


def _databricks(source: str) -> tuple[list[Token], list[exp.Expr | None]] | None:
    """The text read as Databricks SQL, a superset of Spark's: a notebook's `%sql` cell may use its
    JSON paths (`info:vessel_name::STRING`), which Spark's grammar rejects. None if that fails too."""
    databricks = Databricks()
    try:
        tokens = databricks.tokenize(source)
        return tokens, list(databricks.parser().parse(tokens, source))
    except Exception:  # noqa: BLE001 - sqlglot raises several error types
        return None


def _depths(tokens: list[Token]) -> list[int]:
    depths, depth = [], 0
    for token in tokens:
        if token.token_type == TokenType.R_PAREN:
            depth -= 1
        depths.append(depth)
        if token.token_type == TokenType.L_PAREN:
            depth += 1
    return depths


def _readable_statements(source: str, tokens: list[Token], depths: list[int]) -> str:
    """`source` with every top-level statement sqlglot cannot parse blanked out (newlines kept)."""
    ends = [t.start for t, d in zip(tokens, depths) if t.token_type == TokenType.SEMICOLON and d == 0]
    pieces, start = [], 0
    for end in [*ends, len(source)]:
        chunk = source[start:end]
        try:
            sqlglot.parse(chunk, read="spark")
        except Exception:  # noqa: BLE001
            chunk = re.sub(r"[^\n]", " ", chunk)
        pieces.append(chunk)
        if end < len(source):
            pieces.append(";")
        start = end + 1
    return "".join(pieces)


def _first_own_name(query: exp.Expr) -> int | None:
    """The earliest located name in `query`, outside its CTEs and nested queries."""
    starts = []
    stack = [query]
    while stack:
        node = stack.pop()
        if node is not query and isinstance(node, (exp.Query, exp.With, exp.Subquery)):
            continue
        if isinstance(node, exp.Hint):
            continue  # sqlglot parses a hint's text apart: its offsets count from the hint, not the query
        if "start" in node.meta:
            starts.append(node.meta["start"])
        stack.extend(node.iter_expressions())
    return min(starts) if starts else None
