"""The operator catalogue: how each PySpark API behaves, read from rules/catalogue/*.toml.

Operator behaviour is data: the graph builder and the rules look entries up here instead of
branching on method names.
"""

from __future__ import annotations

import functools
import importlib.resources
import tomllib
from dataclasses import dataclass, field, fields

STATES = {"stateless", "partitioned", "unknown", "function"}
SELECTIVITIES = {"exactly-one", "at-most-one", "any", "function"}
FORWARDINGS = {"all", "keys", "none", "function", "selected", "renamed", "dropped"}
ORDER_REQUIREMENTS = {"none", "total", "per-key"}
ORDER_EFFECTS = {
    "preserves",
    "destroys",
    "establishes-total",
    "establishes-per-key",
    "sorts-within-partitions",
    "by-count",  # coalesce: coalesce(1) concatenates partitions in order; more merge them freely
}
PARTITIONING_EFFECTS = {
    "preserves",
    "round-robin",
    "hash",
    "single",
    "range",
    "unknown",
    "by-args",  # hash with key columns, round-robin without
    "by-count",  # coalesce: single when the count is 1
    "unless-preserved",  # RDD map: keeps the partitioner only with preservesPartitioning=True
}
KEY_SOURCES = {"none", "args", "pair-key"}
RECEIVERS = {
    "DataFrame",
    "GroupedData",
    "CoGroupedData",
    "RDD",
    "DStream",
    "SparkSession",
    "SparkContext",
    "StreamingContext",
    "Reader",
    "StreamReader",
    "Writer",
    "StreamWriter",
    "WindowSpec",
    "functions",
}
RETURNS = RECEIVERS - {"functions"} | {"driver", "list", "Broadcast", "Accumulator"}


class CatalogueError(ValueError):
    pass


@dataclass(frozen=True)
class OperatorSpec:
    """One method of a Spark value, e.g. DataFrame.groupBy."""

    receiver: str
    method: str
    returns: str = ""
    state: str = "stateless"
    selectivity: str = "exactly-one"
    forwarding: str = "all"
    order_requirement: str = "none"
    order_effect: str = "preserves"
    partitioning_effect: str = "preserves"
    shuffle: bool = False
    keys: str = "none"
    functions: tuple[int, ...] = ()
    function_role: str = ""
    data_args: tuple[int, ...] = ()
    column_functions: str = ""
    streaming_stateful: bool = False
    keeps_arbitrary_row: bool = False
    # The result is one row (a global aggregation): any order of it is the same order.
    single_row: bool = False
    # String arguments are SQL expressions (selectExpr): their functions are column calls.
    sql_columns: bool = False
    partitioning_dependent: bool = False
    # Adds an index or id derived from the partition layout (zipWithIndex): SPX105.
    assigns_ids: bool = False
    # Per entry of `functions`: "merge" (must be a commutative monoid), "seq" (folds one value into
    # an accumulator), "create" (unary) or "inverse" (reduceByKeyAndWindow's invFunc). Empty: all merge.
    combiner_kinds: tuple[str, ...] = ()
    produces_order_sensitive_groups: bool = False
    uses_partitioner: bool = False
    watermark: bool = False
    source: bool = False
    streaming: bool = False
    sink: bool = False
    is_property: bool = False

    @property
    def api(self) -> str:
        return f"{self.receiver}.{self.method}"


@dataclass(frozen=True)
class FunctionSpec:
    """One column function of pyspark.sql.functions."""

    name: str
    aggregate: bool = False
    order_sensitive: bool = False
    window_only: bool = False
    order_normalizing: bool = False
    partitioning_dependent: bool = False
    processing_time: bool = False
    generator: bool = False
    higher_order_fold: bool = False
    sql_expression: bool = False
    time_window: bool = False
    udf_factory: bool = False
    constant: bool = False
    tie_sensitive: bool = False
    frame_hint: bool = False


@dataclass(frozen=True)
class Catalogue:
    operators: dict[tuple[str, str], OperatorSpec] = field(default_factory=dict)
    functions: dict[str, FunctionSpec] = field(default_factory=dict)

    def operator(self, receiver: str, method: str) -> OperatorSpec | None:
        return self.operators.get((receiver, method))

    def receivers_of(self, method: str) -> list[str]:
        return [receiver for receiver, name in self.operators if name == method]


_ENUMS = {
    "state": STATES,
    "selectivity": SELECTIVITIES,
    "forwarding": FORWARDINGS,
    "order_requirement": ORDER_REQUIREMENTS,
    "order_effect": ORDER_EFFECTS,
    "partitioning_effect": PARTITIONING_EFFECTS,
    "keys": KEY_SOURCES,
    "returns": RETURNS,
}


def _operator(receiver: str, method: str, entry: dict, where: str) -> OperatorSpec:
    known = {f.name for f in fields(OperatorSpec)} - {"receiver", "method"}
    for key, value in entry.items():
        if key not in known:
            raise CatalogueError(f"{where}: unknown field {key!r}")
        if key in _ENUMS and value not in _ENUMS[key]:
            raise CatalogueError(f"{where}: {key} = {value!r} is not one of {sorted(_ENUMS[key])}")
    values = dict(entry)
    values.setdefault("returns", receiver)
    for key in ("functions", "data_args", "combiner_kinds"):
        values[key] = tuple(values.get(key, ()))
    if values["functions"] and not values.get("function_role"):
        raise CatalogueError(f"{where}: functions given without function_role")
    return OperatorSpec(receiver=receiver, method=method, **values)


def _function(name: str, entry: dict, where: str) -> FunctionSpec:
    known = {f.name for f in fields(FunctionSpec)} - {"name"}
    for key, value in entry.items():
        if key not in known:
            raise CatalogueError(f"{where}: unknown field {key!r}")
        if not isinstance(value, bool):
            raise CatalogueError(f"{where}: {key} must be true or false")
    return FunctionSpec(name=name, **entry)


def parse_catalogue_file(name: str, text: str, catalogue: Catalogue) -> None:
    data = tomllib.loads(text)
    receiver = data.pop("receiver", None)
    if receiver not in RECEIVERS:
        raise CatalogueError(f"{name}: receiver {receiver!r} is not one of {sorted(RECEIVERS)}")
    aliases = {}
    for method, entry in data.items():
        where = f"{name}: [{method}]"
        if not isinstance(entry, dict):
            raise CatalogueError(f"{where}: expected a table")
        if "alias_of" in entry:
            if set(entry) != {"alias_of"}:
                raise CatalogueError(f"{where}: an alias takes no other fields")
            aliases[method] = entry["alias_of"]
        elif receiver == "functions":
            catalogue.functions[method] = _function(method, entry, where)
        else:
            catalogue.operators[(receiver, method)] = _operator(receiver, method, entry, where)
    for method, target in aliases.items():
        spec = catalogue.operators.get((receiver, target))
        if spec is None:
            raise CatalogueError(f"{name}: [{method}] is an alias of unknown {target!r}")
        catalogue.operators[(receiver, method)] = OperatorSpec(
            **{**{f.name: getattr(spec, f.name) for f in fields(spec)}, "method": method}
        )


@functools.cache
def load_catalogue() -> Catalogue:
    catalogue = Catalogue()
    folder = importlib.resources.files("sparkpar_lint.ruledata") / "catalogue"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            parse_catalogue_file(entry.name, entry.read_text(encoding="utf-8"), catalogue)
    return catalogue
