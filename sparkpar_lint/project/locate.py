"""Where a project's own modules are: `from .utils import f`, `from pkg.mod import f` and
`import pkg.mod as m` resolved to files on disk, as Python would find them from the importing file.

Only the project is searched: the importing file's directory and its parents up to the project
root (the nearest directory with a pyproject.toml, setup.py, setup.cfg or .git; three levels when
there is none), each also with a `src/` layout. Installed packages (site-packages) are libraries,
not the project: files there resolve nothing.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from sparkpar_lint.sources.run_magic import run_targets

_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_LEVELS_WITHOUT_MARKER = 3
_INSTALLED = ("site-packages", "dist-packages")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# `from X import (a, b)` / `from X import a, b` / `import a.b as c, d`, found without parsing: the
# cache key of every file needs them, and a warm run must not parse.
_FROM_IMPORT = re.compile(rb"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]*(\([^)]*\)|[^\r\n#;]*)", re.MULTILINE)
_PLAIN_IMPORT = re.compile(rb"^[ \t]*import[ \t]+([^\r\n#;]+)", re.MULTILINE)


@lru_cache(maxsize=4096)
def search_dirs(directory: str) -> tuple[str, ...]:
    """Directories an absolute import is looked up in, for a file in `directory`; nearest first."""
    chain = _up_to_root(directory)
    found = []
    for candidate in chain:
        found.append(str(candidate))
        if (candidate / "src").is_dir():
            found.append(str(candidate / "src"))
    return tuple(found)


@lru_cache(maxsize=4096)
def _up_to_root(directory: str) -> tuple[Path, ...]:
    """`directory` and its parents up to the project root; empty for installed packages. Looked
    up once per directory and run: every file of a run asks, for its cache key."""
    if any(part in _INSTALLED for part in Path(directory).parts):
        return ()
    chain = [Path(directory), *Path(directory).parents]
    root = next((i for i, d in enumerate(chain) if _is_root(d)), None)
    return tuple(chain[: (root if root is not None else _LEVELS_WITHOUT_MARKER) + 1])


def _is_root(directory: Path) -> bool:
    return any((directory / m).exists() for m in _ROOT_MARKERS)


def project_root(path: str) -> str | None:
    """The directory marking the project (pyproject.toml, setup.py, setup.cfg, .git) above `path`;
    None without one: a tree with no marker is not walked for the callers of its modules."""
    return _root_of(os.path.dirname(os.path.abspath(path)))


@lru_cache(maxsize=4096)
def _root_of(directory: str) -> str | None:
    chain = _up_to_root(directory)
    return str(chain[-1]) if chain and _is_root(chain[-1]) else None


# A project walked for the modules importing one of its modules is this size at most; larger
# trees are left unwalked (callers' contexts are then unknown, as without cross-file analysis).
MAX_PROJECT_FILES = 3000
_MAX_SCANNED_BYTES = 1024 * 1024


@lru_cache(maxsize=64)
def importers_index(root: str) -> dict[str, tuple[str, ...]]:
    """Module file -> the project files importing it, for the project under `root`."""
    from sparkpar_lint.discovery import SKIPPED_DIRS

    index: dict[str, list[str]] = {}
    seen = 0
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = [d for d in subdirs if d not in SKIPPED_DIRS and not d.startswith(".")]
        for name in files:
            if not name.endswith(".py"):
                continue
            seen += 1
            if seen > MAX_PROJECT_FILES:
                return {}
            path = os.path.join(directory, name)
            try:
                with open(path, "rb") as handle:
                    data = handle.read(_MAX_SCANNED_BYTES)
            except OSError:
                continue
            for module in imported_modules(path, data):
                index.setdefault(module, []).append(os.path.realpath(path))
    return {module: tuple(files) for module, files in index.items()}


def is_test_file(path: str) -> bool:
    """A test module (`tests/`, `test_*.py`, `*_test.py`, `conftest.py`)."""
    parts = Path(path).parts
    name = parts[-1]
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or any(p in ("tests", "test") for p in parts[:-1])
    )


def module_file(importer: str, module: str) -> str | None:
    """The file of `module` ("pkg.mod", or ".mod" / "..pkg.mod" relative to `importer`), or None
    when it is not a module of the importer's project."""
    return _module_file(os.path.dirname(os.path.abspath(importer)), module)


@lru_cache(maxsize=16384)
def _module_file(here: str, module: str) -> str | None:
    level = len(module) - len(module.lstrip("."))
    dotted = module[level:]
    parts = dotted.split(".") if dotted else []
    if not all(_IDENTIFIER.match(p) for p in parts):
        return None
    if level:
        if not search_dirs(here):
            return None
        base = Path(here)
        for _ in range(level - 1):
            base = base.parent
        return _file_in(str(base), parts) if parts else None
    if not parts:
        return None
    for directory in search_dirs(here):
        found = _file_in(directory, parts)
        if found is not None:
            return found
    return None


def function_module(importer: str, qualified: str) -> tuple[str, str] | None:
    """(module file, function name) for a dotted name such as "pkg.mod.f" or ".utils.f"."""
    module, _, name = qualified.rpartition(".")
    if not module.strip("."):
        return None  # `from . import f`: f names a module, not a function of one
    found = module_file(importer, module)
    return (found, name) if found is not None else None


def _file_in(directory: str, parts: list[str]) -> str | None:
    base = os.path.join(directory, *parts)
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(candidate):
            return os.path.realpath(candidate)
    return None


def imported_modules(importer: str, data: bytes) -> list[str]:
    """Files of the project modules `data` imports (each module and, for `from M import a`, `M.a`
    when that is a module), for cache keys: a superset is harmless, a miss is a stale result."""
    names: list[str] = []
    for match in _FROM_IMPORT.finditer(data):
        module = match.group(1).decode("ascii", "replace")
        names.append(module)
        listed = match.group(2).decode("utf-8", "replace").strip("()")
        for item in listed.split(","):
            name = item.split(" as ")[0].strip()
            if _IDENTIFIER.match(name):
                names.append(f"{module}.{name}" if not module.endswith(".") else module + name)
    for match in _PLAIN_IMPORT.finditer(data):
        for item in match.group(1).decode("utf-8", "replace").split(","):
            names.append(item.split(" as ")[0].strip())
    files = []
    for name in dict.fromkeys(names):
        found = module_file(importer, name) if name else None
        if found is not None and found not in files and found != os.path.realpath(importer):
            files.append(found)
    # A notebook's `%run ./other` reads the other notebook's functions as a star import does.
    files += [target for target in run_targets(importer, data, search_dirs) if target not in files]
    return files


def forget() -> None:
    """Drop what was found on disk (a long-lived editor server sees modules come and go)."""
    search_dirs.cache_clear()
    _up_to_root.cache_clear()
    _root_of.cache_clear()
    _module_file.cache_clear()
    importers_index.cache_clear()
