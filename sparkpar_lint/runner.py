"""A lint run: discover files, consult the cache, analyse the rest (in parallel when it pays), and
apply suppressions, per-file ignores and severity overrides."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from sparkpar_lint.cache import Cache
from sparkpar_lint.changed import affected, changed_files
from sparkpar_lint.config import Config, selected_rules
from sparkpar_lint.decoding import DecodeError, decode, decode_file
from sparkpar_lint.discovery import (
    Discovery,
    NotASourceFile,
    describe_read_error,
    discover,
    matches,
    read_source_bytes,
)
from sparkpar_lint.isolation import DEFAULT_FILE_TIMEOUT, Failure, map_isolated
from sparkpar_lint.model import ExitStatus, FileResult, Finding
from sparkpar_lint.project.locate import forget as forget_project_files
from sparkpar_lint.project.locate import importers_index, project_root
from sparkpar_lint.project.summary import dependency_digest, module_digest
from sparkpar_lint.settings import AnalysisSettings
from sparkpar_lint.sources import is_notebook

T = TypeVar("T")
R = TypeVar("R")

# Below this many files to analyse, starting worker processes costs more than it saves.
PARALLEL_THRESHOLD = 50
# Only files that mention Spark can hold a finding; checking the bytes is far cheaper than parsing.
_MENTIONS_SPARK = re.compile(rb"spark", re.IGNORECASE)


@dataclass
class RunResult:
    results: list[FileResult] = field(default_factory=list)
    # Path-level problems (missing path, unreadable directory): the run exits 2.
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Source text of files with findings (suppressed ones too), for code frames and SARIF.
    sources: dict[str, str] = field(default_factory=dict)
    files_checked: int = 0
    cache_hits: int = 0

    @property
    def findings(self) -> list[Finding]:
        return sorted((f for r in self.results for f in r.findings), key=Finding.sort_key)

    @property
    def suppressed(self) -> list[Finding]:
        return sorted((f for r in self.results for f in r.suppressed), key=Finding.sort_key)

    @property
    def all_errors(self) -> list[str]:
        return self.errors + [r.error for r in self.results if r.error]

    @property
    def exit_status(self) -> ExitStatus:
        if self.all_errors:
            return ExitStatus.ERROR
        # Not `self.findings`: sorting every finding again to see whether there is one.
        return ExitStatus.FINDINGS if any(r.findings for r in self.results) else ExitStatus.CLEAN


@dataclass(frozen=True)
class _Job:
    path: str
    data: bytes
    rule_ids: frozenset[str]
    cache_key: str | None
    settings: AnalysisSettings = AnalysisSettings()


def run(
    paths: Sequence[str],
    config: Config,
    rule_ids: Collection[str],
    *,
    cache_dir: Path | None = None,
    jobs: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    file_timeout: float | None = DEFAULT_FILE_TIMEOUT,
    changed_since: str | None = None,
) -> RunResult:
    """Lint `paths`; `rule_ids` is the selection after --select/--ignore, `cache_dir` None = off,
    `file_timeout` the seconds one file may take (None or 0: no limit), `changed_since` a git
    REF (see `find_files`)."""
    found = find_files(paths, config, changed_since)
    outcome = RunResult(errors=found.errors, warnings=found.warnings)
    cache = Cache(cache_dir) if cache_dir is not None else None
    settings = analysis_settings(config, cache_dir)
    forget_project_files()
    _importer_digest.cache_clear()
    module_digest.cache_clear()
    pending: list[_Job] = []
    done = 0
    # One set object per distinct per-file selection: a job per file held its own copy.
    selections: dict[frozenset[str], frozenset[str]] = {}
    for path in found.files:
        result, job = _prepare(path, config, rule_ids, cache, settings, selections)
        if result is not None:
            outcome.results.append(result)
            outcome.cache_hits += _is_cached(result)
            done += 1
            # A warm run of many files is all cache reads: the bar counts them too.
            if on_progress is not None:
                on_progress(done, len(found.files))
        if job is not None:
            pending.append(job)
    outcome.files_checked = len(found.files)
    for job, result, source in _analyse_all(pending, jobs, file_timeout):
        if cache is not None and job.cache_key is not None and result.error is None:
            cache.put(job.cache_key, result.findings, result.suppressed)
        outcome.results.append(result)
        if result.findings or result.suppressed:
            outcome.sources.update(source)
        done += 1
        if on_progress is not None:
            on_progress(done, len(found.files))
    for result in outcome.results:
        result.findings = _override_severity(result.findings, config)
        result.suppressed = _override_severity(result.suppressed, config)
        if (result.findings or result.suppressed) and not any(key in outcome.sources for key in _frame_keys(result)):
            outcome.sources.update(_read_sources(result))
        for path in _related_files(result):
            if path not in outcome.sources:
                outcome.sources.update(_read_plain(path))
    outcome.results.sort(key=lambda r: r.path)
    return outcome


def find_files(paths: Sequence[str], config: Config, changed_since: str | None = None) -> Discovery:
    """The files under `paths` a run checks (lint and fix both walk this way), with the problems
    met on the way; `changed_since`: only those changed since that git REF's merge base and those
    depending on them (raises ChangedSinceError when git cannot say)."""
    found = discover(paths, config.exclude, config.root, config.include, config.follow_links)
    if changed_since is not None:
        found.files = affected(found.files, changed_files(changed_since))
    return found


class Unreadable(Exception):
    """A discovered file that cannot be read; the message names it and says why, in one line."""


def read_input(path: str) -> bytes:
    """A discovered file's bytes, as lint and fix read them (a regular file within the size limit)."""
    try:
        return read_source_bytes(path)
    except (OSError, NotASourceFile) as error:
        raise Unreadable(describe_read_error(path, error)) from None


def worth_analysing(path: str, data: bytes) -> bool:
    """Whether a file can hold a finding. A notebook or SQL file is checked whatever it mentions:
    `%sql` cells name no Spark API, and a broken notebook must be reported."""
    return _MENTIONS_SPARK.search(data) is not None or is_notebook(path, data)


def effective_rules(
    config: Config, all_ids: Iterable[str], select: Sequence[str] | None = None, ignore: Iterable[str] = ()
) -> set[str]:
    """Rules a run checks: --select replaces the config's select, --ignore adds to its ignore."""
    return selected_rules(all_ids, select or config.select, (*config.ignore, *ignore))


def check_text(
    path: str, data: bytes, config: Config, rule_ids: Collection[str], cache: Cache | None = None
) -> FileResult:
    """One file's result from bytes in hand (an editor's unsaved buffer), as `run` reports it:
    the same per-file ignores, cache, suppressions and severity overrides."""
    forget_project_files()
    _importer_digest.cache_clear()
    module_digest.cache_clear()
    file_rules = frozenset(rules_for_file(path, config, rule_ids))
    settings = analysis_settings(config, cache.directory if cache is not None else None)
    key = cache.key(path, data, file_rules, dependency_text(path, data, settings)) if cache is not None else None
    cached = cache.get(key) if cache is not None and key is not None else None
    if cached is not None:
        result = FileResult(path, cached[0], suppressed=cached[1])
    else:
        result, _ = check_source(path, data, file_rules, settings)
        if cache is not None and key is not None and result.error is None:
            cache.put(key, result.findings, result.suppressed)
    result.findings = _override_severity(result.findings, config)
    result.suppressed = _override_severity(result.suppressed, config)
    return result


def analysis_settings(config: Config, cache_dir: Path | None) -> AnalysisSettings:
    """What the analysis reads from the configuration; summaries live beside the cache."""
    return AnalysisSettings(
        unique_columns=config.unique_columns,
        watermark_delay=config.watermark_delay,
        summary_dir=str(Path(cache_dir) / "summaries") if cache_dir is not None else None,
    )


def dependency_text(path: str, data: bytes, settings: AnalysisSettings) -> str:
    """Everything besides the file's own bytes its findings depend on, for its cache key: the
    settings rules read and the content of each project module it imports."""
    parts = [settings.cache_text()]
    if settings.cross_file:
        parts.append(dependency_digest(path, data))
        # What the project's other modules pass to this one's functions (callers' contexts).
        root = project_root(path)
        parts += [_importer_digest(i) for i in (importers_index(root).get(os.path.realpath(path), ()) if root else ())]
    return "\n".join(parts)


@lru_cache(maxsize=65536)
def _importer_digest(importer: str) -> str:
    """An importing module's content and its own imports' (one read per run: many files share
    their importers). Cleared at the start of every run."""
    try:
        content = read_source_bytes(importer)
    except (OSError, NotASourceFile):
        return importer + "\0missing"
    return importer + "\0" + hashlib.sha256(content).hexdigest() + dependency_digest(importer, content)


def check_source(
    path: str, data: bytes, rule_ids: Collection[str], settings: AnalysisSettings | None = None
) -> tuple[FileResult, dict[str, str]]:
    """Decode, analyse and apply suppressions to one file; never raises. Returns the result and
    the texts code frames show, by `path` (or `path:cell N` for a Jupyter cell)."""
    from sparkpar_lint.sql.literal_edit import fixes_judged_only

    # A lint reports a fix by its safety only: the rewritten SQL of each is never built.
    with fixes_judged_only():
        return _check_file(path, data, rule_ids, settings)


def _check_file(
    path: str, data: bytes, rule_ids: Collection[str], settings: AnalysisSettings | None
) -> tuple[FileResult, dict[str, str]]:
    from sparkpar_lint.analysis import analyze
    from sparkpar_lint.suppressions import split_suppressions

    if is_notebook(path, data):
        return _check_notebook(path, data, rule_ids, settings)
    try:
        source, _ = decode_file(path, data)
    except DecodeError as error:
        return FileResult(path, error=str(error)), {}
    try:
        # analyze() reports SPX901 whatever the selection, so the selection is applied here too.
        # A lint run reports fixes by their safety only; the rewrites themselves (closures over
        # CST nodes) stay in this process, since results may cross to the parent worker pool.
        findings = [
            dataclasses.replace(f, fix=None) for f in analyze(path, source, rule_ids, settings) if f.rule_id in rule_ids
        ]
        kept, suppressed = split_suppressions(findings, source)
        return FileResult(path, kept, suppressed=suppressed), {path: source}
    except RecursionError:
        return FileResult(path, error=f"{path}: internal error: nesting too deep to analyse"), {}
    except MemoryError:
        raise  # the worker reports it as over the memory budget
    except Exception as error:  # one bad file must not stop the run, so report it and move on
        return FileResult(path, error=f"{path}: internal error: {type(error).__name__}: {error}"), {}


def _check_notebook(
    path: str, data: bytes, rule_ids: Collection[str], settings: AnalysisSettings | None
) -> tuple[FileResult, dict[str, str]]:
    from sparkpar_lint.notebook_lint import lint_notebook
    from sparkpar_lint.sources.notebook import NotebookError, read_notebook

    try:
        notebook = read_notebook(path, data)
        findings = lint_notebook(notebook, rule_ids, settings)
    except NotebookError as error:
        return FileResult(path, error=str(error)), {}
    except RecursionError:
        return FileResult(path, error=f"{path}: internal error: nesting too deep to analyse"), {}
    except Exception as error:  # one bad file must not stop the run, so report it and move on
        return FileResult(path, error=f"{path}: internal error: {type(error).__name__}: {error}"), {}
    return FileResult(path, findings), notebook.display_sources(findings)


def map_in_workers(function: Callable[[T], R], items: Sequence[T], jobs: int | None) -> Iterator[R]:
    """`map` over `items`, across processes when there are enough of them to repay the start-up."""
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(items) <= PARALLEL_THRESHOLD:
        yield from map(function, items)
        return
    chunksize = max(1, min(16, len(items) // (jobs * 4)))
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(function, items, chunksize=chunksize)


def _prepare(
    path: str,
    config: Config,
    rule_ids: Collection[str],
    cache: Cache | None,
    settings: AnalysisSettings,
    selections: dict[frozenset[str], frozenset[str]],
) -> tuple[FileResult | None, _Job | None]:
    """A finished result (cache hit, unreadable, not Spark code) or a job for the analyser;
    `selections` keeps one copy of each distinct set of rules."""
    try:
        data = read_input(path)
    except Unreadable as error:
        return FileResult(path, error=str(error)), None
    if not worth_analysing(path, data):
        return FileResult(path), None
    file_rules = frozenset(rules_for_file(path, config, rule_ids))
    file_rules = selections.setdefault(file_rules, file_rules)
    if cache is None:
        return None, _Job(path, data, file_rules, None, settings)
    key = cache.key(path, data, file_rules, dependency_text(path, data, settings))
    cached = cache.get(key)
    if cached is not None:
        return _CachedResult(path, cached[0], suppressed=cached[1]), None
    return None, _Job(path, data, file_rules, key, settings)


class _CachedResult(FileResult):
    """A result served from the cache (counted, otherwise identical)."""


def _is_cached(result: FileResult) -> bool:
    return isinstance(result, _CachedResult)


def rules_for_file(path: str, config: Config, rule_ids: Collection[str]) -> set[str]:
    """The selected rules less the file's `per-file-ignores` (lint and fix both read this)."""
    ignored = [
        prefix
        for glob, prefixes in config.per_file_ignores.items()
        if matches(path, [glob], config.root)
        for prefix in prefixes
    ]
    return {r for r in rule_ids if not any(r.startswith(p) for p in ignored)}


def check_files(paths: Sequence[str], file_timeout: float | None = DEFAULT_FILE_TIMEOUT) -> list[FileResult]:
    """Every rule on each of `paths`, in order, for a program that embeds the linter (the pytest
    plugin): read and analysed as `lint` does, in a worker process within the time and memory
    budget, so a hostile file costs one error and never the caller. Workers are spawned (the
    caller may have threads); no configuration, no cache."""
    from sparkpar_lint.rules import all_rules

    rule_ids = frozenset(rule.id for rule in all_rules())
    results: dict[str, FileResult] = {}
    pending = []
    for path in paths:
        try:
            pending.append(_Job(path, read_input(path), rule_ids, None))
        except Unreadable as error:
            results[path] = FileResult(path, error=str(error))
    warm_up = _Job("warm-up.py", b"", rule_ids, None)  # imports the analyser in a new worker
    for job, result, _ in _analyse_all(pending, 1, file_timeout, warm_up):
        results[job.path] = result
    return [results[path] for path in paths if path in results]


def _analyse_all(
    pending: list[_Job], jobs: int | None, file_timeout: float | None, warm_up: _Job | None = None
) -> Iterator[tuple[_Job, FileResult, dict[str, str]]]:
    """Every job analysed in worker processes: a crash, a hang or a memory blow-up costs one file."""
    workers = min(jobs or os.cpu_count() or 1, max(1, len(pending) // 4))
    for job, outcome in map_isolated(_analyse, pending, workers, file_timeout, warm_up=warm_up):
        if isinstance(outcome, Failure):
            yield job, FileResult(job.path, error=f"{job.path}: {outcome}"), {}
        else:
            yield (job, *outcome)


def _analyse(job: _Job) -> tuple[FileResult, dict[str, str]]:
    return check_source(job.path, job.data, job.rule_ids, job.settings)


def _override_severity(findings: list[Finding], config: Config) -> list[Finding]:
    if not config.severity:
        return findings
    return [
        dataclasses.replace(f, severity=config.severity[f.rule_id]) if f.rule_id in config.severity else f
        for f in findings
    ]


def _frame_keys(result: FileResult) -> set[str]:
    from sparkpar_lint.sources.notebook import cell_key

    return {cell_key(result.path, f.cell) for f in [*result.findings, *result.suppressed]}


def _read_sources(result: FileResult) -> dict[str, str]:
    """Code-frame texts for a result served from the cache."""
    from sparkpar_lint.sources.notebook import NotebookError, read_notebook

    try:
        data = read_source_bytes(result.path)
        if _is_jupyter(result):
            return read_notebook(result.path, data).display_sources(result.findings)
        return {result.path: decode(data)}
    except (OSError, NotASourceFile, SyntaxError, UnicodeDecodeError, LookupError, NotebookError):
        return {}


def _related_files(result: FileResult) -> set[str]:
    return {r.path for f in [*result.findings, *result.suppressed] for r in f.related if r.path is not None}


def _read_plain(path: str) -> dict[str, str]:
    """A helper module's text, for the code frame of a related location in it."""
    try:
        return {path: decode(read_source_bytes(path))}
    except (OSError, NotASourceFile, SyntaxError, UnicodeDecodeError, LookupError):
        return {}


def _is_jupyter(result: FileResult) -> bool:
    return any(f.cell is not None for f in result.findings)
