"""What the graph builder knows about a Python value while it walks a module."""

from __future__ import annotations

from dataclasses import dataclass, field

from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.stage_graph import ColumnExpr, WindowSpecValue
from sparkpar_lint.model import Span


class Value:
    """Base: nothing known."""


UNKNOWN = Value()


@dataclass(frozen=True)
class SparkValue(Value):
    """A DataFrame, GroupedData, RDD, DStream, reader, writer, session or context.

    `node` is the stage that produced it; None for a value whose origin the module does not show
    (a parameter, an attribute of another object).
    """

    kind: str
    node: int | None = None
    streaming: bool = False
    keys: tuple[str, ...] = ()  # GroupedData: the grouping keys


@dataclass(frozen=True)
class MaybeSparkValue(Value):
    """A parameter or name of unknown type: becomes a SparkValue when used like one."""

    name: str


@dataclass(frozen=True)
class QualifiedName(Value):
    """An imported module, class or function, e.g. pyspark.sql.functions.first."""

    name: str


@dataclass(frozen=True)
class ColumnValue(Value):
    expr: ColumnExpr


@dataclass(frozen=True)
class WindowValue(Value):
    spec: WindowSpecValue


@dataclass(frozen=True)
class StringValue(Value):
    text: str
    span: Span = field(compare=False)
    node: object = field(default=None, compare=False, repr=False)  # the literal, for SQL positions


@dataclass(frozen=True)
class NumberValue(Value):
    """An int or float literal, or a name set to one (`partitions = 1`)."""

    value: int | float


@dataclass(frozen=True)
class TemplateValue(Value):
    """An f-string or `+` of strings: SQL analysis reads it; it names no column."""

    node: object = field(compare=False, repr=False)


@dataclass(frozen=True)
class SequenceValue(Value):
    """A list/tuple literal or comprehension: its items (a comprehension holds its element)."""

    items: tuple[Value, ...]


@dataclass(frozen=True)
class DictValue(Value):
    items: tuple[tuple[Value, Value], ...]


@dataclass(frozen=True)
class FunctionValue(Value):
    """A def or lambda of this module; `udf` when wrapped by udf()/pandas_udf()."""

    function: UserFunction
    scope: object = field(compare=False, repr=False, default=None)
    udf: bool = False


@dataclass(frozen=True)
class DriverValue(Value):
    """A result on the driver (collect(), first(), count()) from stage `node`."""

    node: int


@dataclass(frozen=True)
class ProcessorValue(Value):
    """A class of this module deriving from StatefulProcessor (`instance`: an object of it)."""

    node: object = field(compare=False, repr=False)
    scope: object = field(compare=False, repr=False, default=None)
    instance: bool = False
