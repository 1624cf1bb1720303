"""Parsing one file safely: a cheap nesting check before LibCST, and a deep stack to walk the tree.

LibCST's native parser recurses on the thread's C stack and kills the process (SIGSEGV) on deeply
nested brackets; CPython itself refuses more than 200 levels, so sparkpar refuses them first.
Its tree walks (positions, code generation) recurse in Python once per node, so a chain of
thousands of calls needs far more frames than the default 1,000: analyses run on a thread with a
large stack and a raised recursion limit.
"""

from __future__ import annotations

import gc
import io
import re
import sys
import threading
import tokenize
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import libcst as cst

from sparkpar_lint import long_chains

# CPython's tokenizer refuses more nested brackets than this ("too many nested parentheses").
MAX_BRACKET_DEPTH = 200
# More prefix operators in a row than any real code writes (`- - x`, `not not x`): each nests one
# level in LibCST's parser, whose time grows quadratically with the run and whose stack it
# overflows (`not` x 20,000: SIGABRT; `-` x 50,000: minutes).
MAX_PREFIX_RUN = 200
# Enough for chains of ~20,000 calls; the stack is reserved, not committed, until used.
STACK_BYTES = 512 * 1024 * 1024
RECURSION_LIMIT = 120_000
_OPENERS = "([{"
_CLOSERS = ")]}"
# A comment, or a string with its quotes, by the tokenize module's own patterns (a prefix is
# letters, never a bracket, so it can stay).
_STRING_OR_COMMENT = re.compile(
    "|".join(
        (
            r"#[^\r\n]*",
            "'''" + tokenize.Single3,
            '"""' + tokenize.Double3,
            r"'[^\n'\\]*(?:\\.[^\n'\\]*)*'",
            r'"[^\n"\\]*(?:\\.[^\n"\\]*)*"',
        )
    ),
    re.DOTALL,
)
_NOT_A_BRACKET = re.compile(r"[^()\[\]{}]+")
_PREFIX_OPS = frozenset({"-", "+", "~"})
_PREFIX_WORDS = frozenset({"not", "await"})
# A run needs this many characters drawn from its operators and spaces: a C-speed first sieve.
_PREFIX_CHARACTERS = re.compile(rf"[-+~na][-+~\snotawi]{{{MAX_PREFIX_RUN},}}")
_PREFIX_RUN = re.compile(rf"(?:(?:[-+~]|not\b|await\b)\s*){{{MAX_PREFIX_RUN + 1}}}")
_ONE_KIND = str.maketrans("[{]}", "(())")

T = TypeVar("T")


class TooDeeplyNested(Exception):
    """Brackets nest deeper than MAX_BRACKET_DEPTH, or prefix operators run longer than
    MAX_PREFIX_RUN; `line`/`column` (1-based) locate the one that goes too far."""

    def __init__(self, line: int, column: int, what: str = f"{MAX_BRACKET_DEPTH} nested brackets") -> None:
        super().__init__(f"too deeply nested to analyse (more than {what})")
        self.line, self.column = line, column


def check_nesting(source: str) -> None:
    """Raise TooDeeplyNested when brackets nest deeper than CPython allows, or prefix operators
    run longer than real code ever does."""
    _check_prefix_runs(source)
    if sum(source.count(c) for c in _OPENERS) <= MAX_BRACKET_DEPTH:
        return  # cannot nest deeper than the brackets there are
    if _surely_shallow(source):
        return
    depth = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type != tokenize.OP:
                continue
            if token.string in _OPENERS:
                depth += 1
                if depth > MAX_BRACKET_DEPTH:
                    raise TooDeeplyNested(token.start[0], token.start[1] + 1)
            elif token.string in _CLOSERS:
                depth = max(0, depth - 1)
    except (tokenize.TokenError, SyntaxError):
        return  # not Python: LibCST reports the syntax error itself


def _check_prefix_runs(source: str) -> None:
    # Two C-speed searches clear ordinary code; the tokenizer confirms the rare candidate, so a
    # run of dashes in a string or comment is never mistaken for one.
    if not _PREFIX_CHARACTERS.search(source) or not _PREFIX_RUN.search(_STRING_OR_COMMENT.sub("", source)):
        return
    run = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if (token.type == tokenize.OP and token.string in _PREFIX_OPS) or (
                token.type == tokenize.NAME and token.string in _PREFIX_WORDS
            ):
                run += 1
                if run > MAX_PREFIX_RUN:
                    raise TooDeeplyNested(
                        token.start[0], token.start[1] + 1, f"{MAX_PREFIX_RUN} prefix operators in a row"
                    )
            elif token.type not in (tokenize.NL, tokenize.COMMENT):
                run = 0
    except (tokenize.TokenError, SyntaxError):
        return  # not Python: LibCST reports the syntax error itself


def _surely_shallow(source: str) -> bool:
    """True when the brackets outside strings and comments nest no deeper than the limit.

    The tokenizer's walk above costs about a third of LibCST's parse, so it runs only for files
    this C-speed pass cannot clear: strings and comments are cut out with the tokenize module's own
    string patterns, then each round deletes every innermost bracket pair, so the rounds needed to
    empty what is left are its nesting depth. Anything unbalanced (broken code, or a string these
    patterns read differently from the tokenizer) is left to the tokenizer."""
    brackets = _NOT_A_BRACKET.sub("", _STRING_OR_COMMENT.sub("", source)).translate(_ONE_KIND)
    for _ in range(MAX_BRACKET_DEPTH):
        if not brackets:
            return True
        fewer = brackets.replace("()", "")
        if len(fewer) == len(brackets):
            return False
        brackets = fewer
    return not brackets


def parse_module(source: str) -> cst.Module:
    """`libcst.parse_module` behind the nesting check (raises TooDeeplyNested or ParserSyntaxError);
    long chains of calls are parsed a segment at a time (`long_chains`), to the same tree."""
    check_nesting(source)
    # Before a parse, not after an analysis: a process linting one large file exits without a pass.
    _collect_when_grown()
    # The parse makes a million objects for a large file and no garbage cycles; the collector's
    # passes over them cost about a fifth of the parse (pyspark sources: 2.5 s of 11 s CPU).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return long_chains.parse_module(source)
    finally:
        if enabled:
            gc.enable()


@contextmanager
def tree_kept_out_of_collection() -> Iterator[None]:
    """While one parsed tree is analysed, the collector leaves the objects that exist now (the
    tree) alone, and runs no full pass; they are handed back after.
    Does nothing when objects are frozen already (a nested analysis, or a caller's own freeze)."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    # Young passes go on, full ones wait for the next file's parse (`_collect_when_grown`): what
    # the analysis allocates counts towards the full pass's trigger, so a large module's analysis
    # ran a dozen, each over everything allocated so far (a quarter of a 4,000-line file's CPU).
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], _NO_FULL_PASS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


# A threshold the oldest generation's count never reaches.
_NO_FULL_PASS = 2**30
# A full collection runs when this process has this many memory blocks in use (about 50 MB).
_MIN_BLOCKS_FOR_COLLECTION = 1_000_000
# The block count at which `_collect_when_grown` next collects.
_next_collection = [_MIN_BLOCKS_FOR_COLLECTION]


def full_passes_between_files() -> None:
    """For a process that only lints (a worker): full passes run only when a parse finds the
    memory in use doubled (`_collect_when_grown`), never on the collector's own trigger, which
    the end of each file's analysis would pull, over that file's dead tree (0.8 s for a
    4,000-line file)."""
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], _NO_FULL_PASS)


def _collect_when_grown() -> None:
    """A full collection once the memory blocks in use have doubled since the last one.

    The trees of earlier files are cyclic garbage (stage nodes point back at their graph, which
    holds the tree); the next freeze and unfreeze move them straight into the oldest generation
    without counting them towards that generation's next pass, so the collector's own trigger
    never fires and a worker linting thousands of files keeps every tree. A pass over what
    survives, once per as much again allocated, is linear in the files linted, where a collection
    after every file cost three times the analysis. The block count is a counter: reading it is
    free, where counting the tracked objects would walk them all."""
    # A parse inside an analysis (an imported module's summary) leaves it to the next file's:
    # with the tree frozen, a pass would miss the garbage frozen along with it.
    if sys.getallocatedblocks() < _next_collection[0] or gc.get_freeze_count():
        return
    gc.collect()
    _next_collection[0] = max(_MIN_BLOCKS_FOR_COLLECTION, 2 * sys.getallocatedblocks())


def with_deep_stack(function: Callable[..., T], *args, **kwargs) -> T:
    """Call `function` on a thread with a large stack; its result or its exception comes back."""
    if getattr(_state, "deep", False):
        return function(*args, **kwargs)
    outcome: list = []

    def target() -> None:
        _state.deep = True
        try:
            outcome.append((True, function(*args, **kwargs)))
        except BaseException as error:  # handed back to the caller's thread below
            outcome.append((False, error))

    _raise_recursion_limit()
    try:
        with _lock:
            previous_size = threading.stack_size(STACK_BYTES)
            try:
                thread = threading.Thread(target=target, name="sparkpar-deep-stack", daemon=True)
                thread.start()
            finally:
                threading.stack_size(previous_size)
        thread.join()
    finally:
        _restore_recursion_limit()
    ok, value = outcome[0]
    if ok:
        return value
    raise value


def _raise_recursion_limit() -> None:
    # The limit is per interpreter, but only the deep thread may use it: the main thread's 8 MB
    # stack would overflow (a crash, not a RecursionError) long before 120,000 frames.
    with _lock:
        if _users[0] == 0:
            _users[1] = sys.getrecursionlimit()
            sys.setrecursionlimit(max(RECURSION_LIMIT, _users[1]))
        _users[0] += 1


def _restore_recursion_limit() -> None:
    with _lock:
        _users[0] -= 1
        if _users[0] == 0:
            sys.setrecursionlimit(_users[1])


_state = threading.local()
_lock = threading.Lock()
_users = [0, 1000]  # deep threads running, the limit to restore when none is
