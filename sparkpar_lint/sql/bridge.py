"""Where the graph builder meets SQL: `spark.sql(<string>)` and `createOrReplaceTempView(name)`."""

from __future__ import annotations

import libcst as cst

TEMP_VIEW_METHODS = frozenset(
    {
        "createOrReplaceTempView",
        "createTempView",
        "createGlobalTempView",
        "createOrReplaceGlobalTempView",
        "registerTempTable",
    }
)


def register_view(
    views: dict[str, tuple[int, bool]], method: str, args: list, node_id: int | None, streaming: bool
) -> None:
    """`df.createOrReplaceTempView("name")`: SQL reading `name` continues from `df`, streaming or
    not as `df` is (a foreachBatch micro-batch is a batch DataFrame of a streaming node)."""
    name = getattr(args[0], "text", None) if args else None
    if method in TEMP_VIEW_METHODS and isinstance(name, str) and node_id is not None:
        views[name.lower()] = (node_id, streaming)


def run_query(builder, value) -> tuple[bool, int | None]:
    """(analysed?, node id of the query's result). Strings that are not literal SQL, or that do
    not parse, are left to the caller: no finding, never an error."""
    # sqlglot is imported only for files that hand Spark a string: most files never do.
    from sparkpar_lint.sql.parse import parse
    from sparkpar_lint.sql.stages import SqlContext, run_statements
    from sparkpar_lint.sql.text import sql_text

    node = getattr(value, "node", None)
    if node is None:
        return False, None

    def start_of(literal):
        where = builder.graph.positions.get(literal)  # None: a node of another tree
        return (where.start.line, where.start.column) if where is not None else (1, 0)

    text = sql_text(node, start_of, builder.module.code_for_node)
    if text is None or not text.text.strip():
        return False, None
    parsed = parse(text.text)
    if parsed is None:
        return False, None
    ctx = SqlContext(parsed, text, builder.graph, builder.catalogue, builder.derive_flow, builder.views)
    # The string expression itself: fixes write into its literal parts (sql/literal_edit.py).
    ctx.literal = node.value if isinstance(node, cst.Arg) else node
    return True, run_statements(ctx)
