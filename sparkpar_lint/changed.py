"""`sparkpar lint --changed-since REF`: the files a branch changed, and those whose findings can
change with them.

Changed: what `git diff` shows between REF's merge base with HEAD and the working tree, plus new
untracked files. Affected: a file among the walked PATHS that is changed, or that depends on one,
directly or through other files: by importing a project module (the cross-file summaries of
helpers) or by `%run`-ning a notebook.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable

from sparkpar_lint.discovery import NotASourceFile, read_source_bytes
from sparkpar_lint.project.locate import imported_modules

_GIT_TIMEOUT = 60


class ChangedSinceError(ValueError):
    """git could not say what changed: not a repository, an unknown REF, no git."""


def changed_files(ref: str, cwd: str = ".") -> set[str]:
    """Real paths of the files changed since REF's merge base with HEAD (deleted ones included,
    so their importers count as affected), and of untracked files."""
    root = _git(cwd, "rev-parse", "--show-toplevel").strip()
    base = _git(cwd, "merge-base", ref, "HEAD").strip()
    names = _git(cwd, "diff", "--name-only", "--no-renames", "-z", base, "--").split("\0")
    names += _git(cwd, "ls-files", "--others", "--exclude-standard", "--full-name", "-z").split("\0")
    return {os.path.realpath(os.path.join(root, name)) for name in names if name}


def affected(files: Iterable[str], changed: set[str]) -> list[str]:
    """`files` (paths as walked) that are changed or depend on a changed file, in their order."""
    files = list(files)
    dependencies: dict[str, list[str]] = {}
    pending = [os.path.realpath(path) for path in files]
    while pending:  # every file the walked ones reach, helpers outside PATHS included
        path = pending.pop()
        if path not in dependencies:
            dependencies[path] = _dependencies(path)
            pending.extend(dependencies[path])
    dependents: dict[str, list[str]] = {}
    for path, needed in dependencies.items():
        for dependency in needed:
            dependents.setdefault(dependency, []).append(path)
    reached, frontier = set(changed), list(changed)
    while frontier:
        for dependent in dependents.get(frontier.pop(), ()):
            if dependent not in reached:
                reached.add(dependent)
                frontier.append(dependent)
    return [path for path in files if os.path.realpath(path) in reached]


def _dependencies(path: str) -> list[str]:
    try:
        data = read_source_bytes(path)
    except (OSError, NotASourceFile):
        return []
    return imported_modules(path, data)  # `%run` targets included


def _git(cwd: str, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=_GIT_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ChangedSinceError(f"--changed-since needs git: {error}") from None
    if done.returncode != 0:
        message = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"git {args[0]} failed"
        raise ChangedSinceError(f"--changed-since: {message}")
    return done.stdout
