"""Values a function Spark runs in tasks computes afresh on every run of the task: the wall clock,
Python's `random`, `uuid`, numpy's global generator.

A retried or speculative task, or the same row landing in another partition, gets a different
value. What is only logged or printed (timing a partition) changes no output and is left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from sparkpar_lint.graph.imports import ImportTable, dotted_name
from sparkpar_lint.graph.user_functions import names_in
from sparkpar_lint.graph.visiting import visit

# `date.today()` is left out: like `current_date()` it changes once a day, not between a task and
# its retry.
WALL_CLOCK = frozenset(
    {
        "time.time",
        "time.time_ns",
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "pandas.Timestamp.now",
        "pandas.Timestamp.utcnow",
        "pandas.Timestamp.today",
    }
)
_RANDOM_FUNCTIONS = frozenset(
    {
        "random",
        "randint",
        "randrange",
        "choice",
        "choices",
        "sample",
        "shuffle",
        "uniform",
        "gauss",
        "normalvariate",
        "getrandbits",
        "randbytes",
        "triangular",
        "betavariate",
        "expovariate",
    }
)
RANDOM = frozenset(
    {f"random.{name}" for name in _RANDOM_FUNCTIONS}
    | {
        f"numpy.random.{name}"
        for name in (*_RANDOM_FUNCTIONS, "rand", "randn", "normal", "permutation", "binomial", "poisson")
    }
    | {"uuid.uuid1", "uuid.uuid4", "os.urandom", "secrets.token_hex", "secrets.token_bytes", "secrets.choice"}
)
# Seeding the global generator inside the function makes its draws a function of the seed.
_SEEDS = frozenset({"random.seed", "numpy.random.seed"})
# Calls whose arguments only reach a log or the console.
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})


@dataclass(frozen=True)
class PerTaskValue:
    call: cst.Call
    name: str  # as written, e.g. `dt.now`
    kind: str  # "clock" or "random"


def per_task_values(function: cst.FunctionDef | cst.Lambda, imports: ImportTable) -> list[PerTaskValue]:
    """Clock and random reads in the function's body whose value can reach its output."""
    finder = _Reads(imports)
    visit(function.body, finder)
    if any(name in _SEEDS for _, _, name in finder.found):
        finder.found = [f for f in finder.found if f[2] not in RANDOM]
    logged = _logged_only(function, {id(call) for call, _, _ in finder.found})
    return [
        PerTaskValue(call, written, "clock" if name in WALL_CLOCK else "random")
        for call, written, name in finder.found
        if name not in _SEEDS and id(call) not in logged
    ]


class _Reads(cst.CSTVisitor):
    def __init__(self, imports: ImportTable) -> None:
        self.imports = ImportTable(imports)
        self.found: list[tuple[cst.Call, str, str]] = []

    def visit_Import(self, node: cst.Import) -> None:
        self.imports.add(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.imports.add(node)

    def visit_Call(self, node: cst.Call) -> None:
        written = dotted_name(node.func)
        if written is None:
            return
        head, _, rest = written.partition(".")
        resolved = self.imports.resolve_name(head)
        qualified = f"{resolved}.{rest}" if resolved and rest else resolved or written
        qualified = qualified.replace("numpy.random.mtrand.", "numpy.random.")
        if qualified in WALL_CLOCK or qualified in RANDOM or qualified in _SEEDS:
            self.found.append((node, written, qualified))


def _logged_only(function: cst.FunctionDef | cst.Lambda, calls: set[int]) -> set[int]:
    """The calls (by id) whose value only ever reaches print/logging, directly or through names."""
    if not calls:
        return set()
    uses = _Uses(calls)
    visit(function.body, uses)
    # Names assigned from a read (or from another such name) and read nowhere but in logs.
    tainted = set(uses.assigned_from_reads)
    changed = True
    while changed:
        changed = False
        for target, sources in uses.assignments:
            if target not in tainted and sources & tainted:
                tainted.add(target)
                changed = True
    escaping = {name for name in tainted if name in uses.read_outside_logs}
    logged: set[int] = set()
    for call_id in calls:
        targets = uses.target_of_read.get(call_id)
        if call_id in uses.inside_log:
            logged.add(call_id)
        elif targets and not _reaches(targets, uses.assignments, escaping):
            logged.add(call_id)
    return logged


def _reaches(targets: set[str], assignments: list[tuple[str, set[str]]], escaping: set[str]) -> bool:
    frontier, seen = set(targets), set()
    while frontier:
        name = frontier.pop()
        if name in escaping:
            return True
        seen.add(name)
        frontier |= {t for t, sources in assignments if name in sources and t not in seen}
    return False


def _is_log_call(node: cst.Call) -> bool:
    func = node.func
    if isinstance(func, cst.Name):
        return func.value == "print"
    if isinstance(func, cst.Attribute):
        return func.attr.value in _LOG_METHODS
    return False


class _Uses(cst.CSTVisitor):
    """Where names and the reads are used: in logs, in plain assignments, anywhere else."""

    def __init__(self, calls: set[int]) -> None:
        self.calls = calls
        self.log_depth = 0
        self.inside_log: set[int] = set()
        self.assignments: list[tuple[str, set[str]]] = []
        self.assigned_from_reads: set[str] = set()
        self.target_of_read: dict[int, set[str]] = {}
        self.read_outside_logs: set[str] = set()
        self.assigning: list[set[str]] = []

    def visit_Call(self, node: cst.Call) -> None:
        if id(node) in self.calls and self.log_depth:
            self.inside_log.add(id(node))
        if _is_log_call(node):
            self.log_depth += 1

    def leave_Call(self, node: cst.Call) -> None:
        if _is_log_call(node):
            self.log_depth -= 1

    def visit_Assign(self, node: cst.Assign) -> bool:
        targets = [t.target for t in node.targets]
        if not all(isinstance(t, cst.Name) for t in targets):
            return True
        names = {t.value for t in targets if isinstance(t, cst.Name)}
        sources = names_in(node.value)
        self.assignments += [(name, sources) for name in names]
        for call in _calls_in(node.value):
            if id(call) in self.calls:
                self.assigned_from_reads |= names
                self.target_of_read.setdefault(id(call), set()).update(names)
        # The right-hand side's names are read into the targets, not used: only visit its calls.
        self.assigning.append(names)
        visit(node.value, self)
        self.assigning.pop()
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if not self.log_depth and not self.assigning:
            self.read_outside_logs.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        visit(node.value, self)
        return False


def _calls_in(expr: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            found.append(node)

    visit(expr, _Calls())
    return found
