"""Where a training runs and from which code: what its record keeps beside the options and the files.

Two runs of the same options on the same files give the same weights only from the same training
code on the same kind of processor: :func:`training_code` names the code (what ``nmtlib publish``
compares across the commits a run's models were trained at), :func:`code_state` the commit and the
files of it changed in the checkout, :func:`processor` the CPU. The trainer records them at every start
(``env.json``'s ``starts``, :func:`nmtlib.provenance.starts` reads them). Standard library only, so
that this module, which is training code itself, changes only when what it records does.
"""

from __future__ import annotations

import ast
import platform
import subprocess
from pathlib import Path
from typing import Any

#: the package whose code trains a model; with every module of nmtlib it imports, directly or not,
#: it is the code that decides the weights besides the options and the files (:func:`training_code`)
TRAINER = "nmtlib.train"


def training_code(package: Path = Path(__file__).parent) -> list[str]:
    """The source files of :data:`TRAINER` and of every nmtlib module it imports, directly or not
    (read from the sources, not imported), as paths from the repository root (``nmtlib/...``), sorted:
    two commits at which these files are the same train the same model from the same options and
    data (``nmtlib publish`` compares the commits a run's models were trained at)."""
    root = package.parent

    def source(module: str) -> Path | None:
        path = root.joinpath(*module.split("."))
        return next((p for p in (path.with_suffix(".py"), path / "__init__.py") if p.is_file()), None)

    def imported(path: Path) -> set[str]:
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
        # a module's packages run their __init__ first
        return {".".join(n.split(".")[:k]) for n in names if n.split(".")[0] == package.name
                for k in range(1, n.count(".") + 2)}

    start = source(TRAINER)
    seen: set[Path] = set()
    todo = [start, *sorted(start.parent.glob("*.py"))] if start is not None else []
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo += [p for p in map(source, imported(path)) if p is not None and p not in seen]
    return sorted(p.relative_to(root).as_posix() for p in seen)


def _git(*args: str, cwd: Path) -> str | None:
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True, cwd=cwd).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


def processor() -> str | None:
    """The CPU's name as the system gives it (``model name`` in ``/proc/cpuinfo`` on Linux), or None.

    Kept beside a model because float32 on a CPU is not the same arithmetic everywhere: PyTorch's
    kernels sum in another order on another instruction set, so a model retrained on another
    processor can differ in its last bits and, through them, in a few translations."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or None


def code_state(package: Path = Path(__file__).parent) -> dict[str, Any]:
    """The commit of the checkout ``package`` lies in and the :func:`training_code` files that differ
    from it (uncommitted changes, untracked files): with none, the commit names the code that
    trained; with some, it does not. ``{"git_commit": None, ...}`` outside a git checkout."""
    root = package.resolve().parent
    commit = _git("rev-parse", "HEAD", cwd=root)
    if commit is None:
        return {"git_commit": None, "changed_training_code": None}
    status = _git("status", "--porcelain", "--", *training_code(package), cwd=root) or ""
    changed = sorted(line[3:].strip() for line in status.splitlines() if line.strip())
    return {"git_commit": commit.strip(), "changed_training_code": changed}
