"""Layers point one way: a module imports only from its own layer or the layers below it.

From the bottom: shared helpers (errors, files, atomic writes, host memory, the config and its registries);
data, metrics and models, which know nothing of one another (models may use the vocabulary's
special symbols); checkpoints (load, save, the model a file holds, the device); decoding;
training and reports; and the entry points on top (the command line and the workflow's config
check). Every ``import`` counts, those inside functions too.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "nmtlib"
#: layer of each top-level module or package of nmtlib; a module may import its own layer or lower
LAYERS: dict[str, int] = {
    "__init__": 0, "errors": 0, "files": 0, "atomic": 0, "locks": 0, "registry": 0, "config": 0, "memory": 0,
    "precision": 0, "provenance": 0, "origin": 0, "layout": 0, "words": 0,
    "data": 1, "metrics": 1, "models": 1,
    "checkpoint": 2, "carry": 2,
    "decode": 3,
    "train": 4, "report": 4,
    "cli": 5, "commands": 5, "workflow_config": 5, "__main__": 5,
}
#: parts of one layer that must not import each other (the rest of a layer may: the entry points
#: share the command line's helpers); models may use the vocabulary's special symbols from data
INDEPENDENT = {("data", "metrics"), ("metrics", "data"), ("data", "models"), ("metrics", "models"),
               ("models", "metrics"), ("train", "report"), ("report", "train")}


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] == "nmtlib":
            if node.module == "nmtlib":  # from nmtlib import checkpoint (or __version__, of nmtlib itself)
                found += [(node.lineno, "nmtlib" if alias.name.startswith("__") else f"nmtlib.{alias.name}")
                          for alias in node.names]
            else:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "nmtlib"]
    return found


def layer_violations() -> list[str]:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        here = rel.parts[0].removesuffix(".py")
        for line, module in _imports(path):
            there = _top(module)
            if there == here:
                continue
            if there not in LAYERS or here not in LAYERS:
                bad.append(f"nmtlib/{rel}:{line}: {module} (a module this test does not place in a layer)")
            elif LAYERS[there] > LAYERS[here] or (here, there) in INDEPENDENT:
                bad.append(f"nmtlib/{rel}:{line}: {here} (layer {LAYERS[here]}) imports {module} "
                           f"(layer {LAYERS[there]})")
    return bad


def test_no_module_imports_a_higher_layer():
    assert layer_violations() == []


def test_every_module_has_a_layer():
    tops = {p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in PACKAGE.rglob("*.py")}
    assert tops <= set(LAYERS), tops - set(LAYERS)


def test_the_check_catches_an_upward_import(tmp_path, monkeypatch):
    """The test itself: a data module importing the command line is reported."""
    fake = tmp_path / "nmtlib"
    (fake / "data").mkdir(parents=True)
    (fake / "data" / "x.py").write_text("def f():\n    from nmtlib.cli import main\n")
    (fake / "data" / "y.py").write_text("from nmtlib import checkpoint\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    assert layer_violations() == [
        "nmtlib/data/x.py:2: data (layer 1) imports nmtlib.cli (layer 5)",
        "nmtlib/data/y.py:1: data (layer 1) imports nmtlib.checkpoint (layer 2)",
    ]


def test_the_training_code_holds_every_module_training_loads():
    """``nmtlib.origin.training_code`` (what ``nmtlib publish`` compares across the commits a
    run's models were trained at) holds every nmtlib module that importing the trainer loads, and no
    module of a layer above training's."""
    import subprocess
    import sys

    from nmtlib.origin import training_code

    code = ("import sys, nmtlib.train.trainer, nmtlib.train.step, nmtlib.train.graphs; "
            "print('\\n'.join(m.__file__ for n, m in sys.modules.items() if n.split('.')[0] == 'nmtlib'))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    loaded = {Path(f).resolve().relative_to(ROOT).as_posix() for f in run.stdout.split()}
    files = training_code()
    assert loaded <= set(files), loaded - set(files)
    assert "nmtlib/train/trainer.py" in files and "nmtlib/models/seq2seq.py" in files
    assert not [f for f in files if LAYERS[f.split("/")[1].removesuffix(".py")] > LAYERS["train"]]


def test_a_models_record_names_the_training_code_that_differs_from_its_commit(tmp_path: Path):
    """``code_state``: the commit, and which training-code files differ from it; a change outside the
    training code (a report module) is not named, since it cannot have changed the weights."""
    import shutil
    import subprocess

    from nmtlib.origin import code_state

    shutil.copytree(PACKAGE, tmp_path / "nmtlib", ignore=shutil.ignore_patterns("__pycache__"))

    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path,
                              check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "x")
    assert code_state(tmp_path / "nmtlib") == {"git_commit": git("rev-parse", "HEAD"), "changed_training_code": []}
    with open(tmp_path / "nmtlib" / "report" / "publish.py", "a") as f:
        f.write("# a report change\n")
    assert code_state(tmp_path / "nmtlib")["changed_training_code"] == []
    with open(tmp_path / "nmtlib" / "models" / "attention.py", "a") as f:
        f.write("# a model change\n")
    (tmp_path / "nmtlib" / "train" / "new.py").write_text("# a new training module\n")
    assert code_state(tmp_path / "nmtlib")["changed_training_code"] == ["nmtlib/models/attention.py",
                                                                       "nmtlib/train/new.py"]
    assert code_state(tmp_path / "elsewhere" / "nmtlib") == {"git_commit": None, "changed_training_code": None}
