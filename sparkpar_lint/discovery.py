"""Which files a run checks: walk the given paths, skip environments, caches and excluded globs."""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePath

# Larger than any hand-written module (50,000 lines is ~2 MB); bigger files are generated data.
MAX_FILE_BYTES = 16 * 1024 * 1024
_KINDS = {
    stat.S_IFIFO: "a named pipe",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}

SKIPPED_DIRS = frozenset(
    {
        ".venv",
        "venv",
        ".git",
        "node_modules",
        "__pycache__",
        ".sparkpar_cache",
        "build",
        "dist",
        ".ipynb_checkpoints",
    }  # Jupyter's autosave copies of the notebooks beside them
)


def matches(path: str | PurePath, globs: Iterable[str], root: Path) -> bool:
    """Whether `path` matches a glob, tried on the path relative to `root` and on the bare name."""
    pure = Path(path)
    try:
        relative = pure.resolve().relative_to(root).as_posix()
    except (ValueError, OSError):
        relative = pure.as_posix()
    candidates = (relative, pure.as_posix(), pure.name)
    return any(
        fnmatch.fnmatch(c, g.rstrip("/")) or fnmatch.fnmatch(c, g.rstrip("/") + "/*") for g in globs for c in candidates
    )


@dataclass
class Discovery:
    files: list[str] = field(default_factory=list)
    # Problems that lose work (missing or unreadable paths): the run exits 2.
    errors: list[str] = field(default_factory=list)
    # Things skipped on purpose that the user may want to know about (symlink loops).
    warnings: list[str] = field(default_factory=list)


class NotASourceFile(ValueError):
    """A path that is not a regular file, or too large to be source: its message says which."""


def read_source_bytes(path: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file, refusing pipes and devices (a FIFO would block forever and
    /dev/zero never ends) and files larger than `limit`; raises OSError or NotASourceFile."""
    # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotASourceFile(f"not a regular file ({_KINDS.get(stat.S_IFMT(st.st_mode), 'special file')}); skipped")
        data = handle.read(limit + 1)  # at most: the file may grow while it is read
    if max(len(data), st.st_size) > limit:
        size = max(len(data), st.st_size)
        raise NotASourceFile(f"too large to be source code ({size:,} bytes, limit {limit:,}); skipped")
    return data


def _is_sql_export(path: str) -> bool:
    from sparkpar_lint.sources.sqlfile import is_sql_export

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        with os.fdopen(fd, "rb") as handle:
            return stat.S_ISREG(os.fstat(fd).st_mode) and is_sql_export(handle.read(64))
    except OSError:
        return False  # not ours to report: a .sql file the walk would not check anyway


def describe_read_error(path: str, error: Exception) -> str:
    if isinstance(error, NotASourceFile):
        return f"{path}: {error}"
    return f"{path}: cannot read: {getattr(error, 'strerror', None) or error}"


def discover(
    paths: Iterable[str],
    exclude: Iterable[str] = (),
    root: Path | None = None,
    include: Iterable[str] = (),
    follow_links: bool = False,
) -> Discovery:
    """Files to check, in a stable order; a file named explicitly is checked whatever its suffix.
    A walk takes `*.py`, `*.ipynb`, Databricks SQL exports and files matching an `include` glob.
    A directory symlink that leads outside the directory being walked (to `/`, `/proc/self`) is
    skipped with a warning unless `follow_links`."""
    root = (root or Path.cwd()).resolve()
    exclude = tuple(exclude)
    include = tuple(include)
    found = Discovery()
    seen_files: set[str] = set()

    def add(path: str) -> None:
        key = os.path.realpath(path)
        if key not in seen_files:
            seen_files.add(key)
            found.files.append(path)

    for given in paths:
        given = os.path.normpath(given)  # "./jobs/a.py" and "jobs//a.py" print as "jobs/a.py"
        if exclude and matches(given, exclude, root):
            continue
        try:
            st = os.stat(given)
        except FileNotFoundError:
            found.errors.append(f"{given}: no such file or directory")
            continue
        except OSError as error:
            # ELOOP for a self-referencing symlink, EACCES for a forbidden parent, ...
            found.errors.append(f"{given}: cannot access: {error.strerror or error}")
            continue
        if os.path.isdir(given):
            top = None if follow_links else os.path.realpath(given)
            _walk(given, (st.st_dev, st.st_ino), [], (exclude, include, top), root, add, found)
        else:
            add(given)
    return found


def _walk(directory, identity, ancestors, globs, root, add, found) -> None:
    exclude, include, top = globs
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as error:
        found.errors.append(f"{directory}: cannot list directory: {error.strerror or error}")
        return
    if any(e.name == "pyvenv.cfg" for e in entries):
        return  # a virtualenv, whatever it is called
    chain = [*ancestors, identity]
    for entry in entries:
        path = os.path.normpath(entry.path)
        if exclude and matches(path, exclude, root):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            if entry.name in SKIPPED_DIRS:
                continue
            try:
                st = os.stat(path)
            except OSError as error:
                found.errors.append(f"{path}: cannot access: {error.strerror or error}")
                continue
            child = (st.st_dev, st.st_ino)
            if child in chain:
                found.warnings.append(f"{path}: directory symlink loop, skipped")
                continue
            if top is not None and entry.is_symlink() and not _inside(os.path.realpath(path), top):
                found.warnings.append(f"{path}: directory symlink leads outside {top}; skipped (--follow-links)")
                continue
            _walk(path, child, chain, globs, root, add, found)
        elif entry.name.endswith((".py", ".ipynb", ".sql")) or (include and matches(path, include, root)):
            if entry.is_symlink() and not os.path.exists(path):
                found.errors.append(f"{path}: broken or looping symlink")
                continue
            try:
                is_file = entry.is_file()  # follows symlinks: a *.py link to /dev/zero is not one
            except OSError:
                is_file = False
            if not is_file:
                found.warnings.append(f"{path}: not a regular file; skipped")
                continue
            if entry.name.endswith(".sql") and not (include and matches(path, include, root)):
                if not _is_sql_export(path):
                    continue  # SQL of any dialect: checked when named, or through `include`
            add(path)


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)
