"""One results layout (issue #43): every path of an experiment's folder is declared in
``nmtlib/layout.py``, and no other module of nmtlib spells one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import ROOT
from nmtlib.layout import ENSEMBLE_RUN, Layout, Logs, run_order, run_seed, seed_run, settings_beside
from nmtlib.provenance import ROLES

PACKAGE = ROOT / "nmtlib"
#: the folders of an experiment's results and logs (nmtlib/layout.py), and the two roots
FOLDERS = ("corpus", "data", "vocab", "models", "translations", "scores", "attention", "tables", "figures", "report",
           "benchmark", "results", "logs")
#: a results folder spelled in a string: the folder's name and a slash, at the start of the string or after a
#: separator (``f"{r}/models/..."``, ``"results/<exp>"``)
SPELLED = re.compile(r"(?:^|[\s/`'\"(=<>{])(" + "|".join(FOLDERS) + r")/")
#: paths of the repository that share a folder's name (``nmtlib/data/corpora.yaml``, ``workflow/report/``)
REPOSITORY = re.compile(r"\b(?:nmtlib|workflow|docs)/[\w./<>-]*")
#: the modules that write into the folder they are given (``nmtlib train --out``, ``nmtlib translate --out``)
#: and spell no results path: models, training and decoding are out of the layout's reach
EXEMPT = {"layout.py", "models", "train", "decode"}


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def spelled_paths(package: Path = PACKAGE) -> list[str]:
    """``module:line: text`` of every string in code (docstrings aside) that spells a results folder
    (``"scores/"``, ``f"{r}/data/train.src"``) and every ``path / "models"``, outside :data:`EXEMPT`."""
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if rel.parts[0] in EXEMPT:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        here: list[tuple[int, str]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                if SPELLED.search(REPOSITORY.sub("", node.value)):
                    here.append((node.lineno, repr(node.value)))
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                here += [(node.lineno, f"/ {side.value!r}") for side in (node.left, node.right)
                         if isinstance(side, ast.Constant) and side.value in FOLDERS]
        found += [f"nmtlib/{rel}:{line}: {text}" for line, text in sorted(here)]
    return found


def test_no_module_spells_a_results_path():
    assert spelled_paths() == []


def test_the_scan_finds_a_spelled_path(tmp_path):
    """The test itself: each way of spelling a results path is reported, a repository path is not."""
    fake = tmp_path / "nmtlib"
    (fake / "report").mkdir(parents=True)
    (fake / "report" / "x.py").write_text(
        '"""Reads scores/<variant>/ (a docstring may say where things are)."""\n'
        'def f(r, results, name):\n'
        '    a = f"{r}/data/train.src"\n'
        '    b = results / "translations" / name\n'
        '    c = "tables/summary.csv"\n'
        '    d = "a data set of nmtlib/data/corpora.yaml, workflow/report/x.rst"\n'
        '    return a, b, c, d\n')
    (fake / "train").mkdir()
    (fake / "train" / "y.py").write_text('OUT = "models/x"\n')
    assert spelled_paths(fake) == ["nmtlib/report/x.py:3: '/data/train.src'",
                                   "nmtlib/report/x.py:4: / 'translations'",
                                   "nmtlib/report/x.py:5: 'tables/summary.csv'"]


def test_a_str_layout_gives_the_workflows_patterns():
    """The paths the rules declare, as the workflow wrote them before the layout (f-strings)."""
    results, logs = Layout.of("exp"), Logs.of("exp")
    assert results.model("{variant}", "seed{seed}") == "results/exp/models/{variant}/seed{seed}/model.pt"
    assert (results.translation("{variant}", "{run}", "{setting}")
            == "results/exp/translations/{variant}/{run}/test.{setting}")
    assert results.translation_files("v", "ensemble", "beam5") == [
        "results/exp/translations/v/ensemble/test.beam5.txt", "results/exp/translations/v/ensemble/test.beam5.unk.txt",
        "results/exp/translations/v/ensemble/test.beam5.jsonl"]
    assert results.scores("v", "seed2", "aer") == "results/exp/scores/v/seed2/test.aer.json"
    assert results.decode_settings("v") == "results/exp/models/v/decode.json"
    assert results.columns("summary") == "results/exp/report/columns/summary.rst"
    assert logs.job("make_report") == "logs/exp/make_report.log"
    assert logs.job("translate", "{variant}.{run}.{setting}") == "logs/exp/translate/{variant}.{run}.{setting}.log"
    assert logs.benchmark("train_model", "v.seed1") == "logs/exp/benchmark/train_model/v.seed1.tsv"
    assert logs.benchmark("make_report") == "logs/exp/benchmark/make_report.tsv"


def test_a_path_layout_gives_paths_and_finds_files(tmp_path):
    results = Layout(tmp_path)
    assert results.train_log("v", "seed1") == tmp_path / "models" / "v" / "seed1" / "train_log.csv"
    for variant, run in (("b", "seed2"), ("a", "seed1"), ("a", "seed3")):
        results.train_log(variant, run).parent.mkdir(parents=True)
        results.train_log(variant, run).write_text("step\n")
    results.model_dir("c", "seed1").mkdir(parents=True)  # a folder without a log
    assert results.found(results.train_log("*", "*")) == [
        (results.train_log("a", "seed1"), ("a", "seed1")), (results.train_log("a", "seed3"), ("a", "seed3")),
        (results.train_log("b", "seed2"), ("b", "seed2"))]
    assert [stars for _, stars in results.found(results.train_log("a", "*"))] == [("seed1",), ("seed3",)]


def test_the_training_inputs_are_the_roles_a_model_records():
    assert tuple(Layout.of("exp").train_inputs()) == ROLES


def test_translate_finds_the_settings_the_workflow_writes():
    results = Layout(Path("/r"))
    assert settings_beside(results.model("v", "seed4")) == results.decode_settings("v")


def test_the_resume_state_is_where_the_trainer_writes_it():
    """The workflow decides a training's priority by the resume state's path in the layout; the
    trainer spells it in ``TrainPaths.last``. Until the trainer reads the layout, the two must agree."""
    from nmtlib.train.trainer import TrainPaths

    results = Layout(Path("/r"))
    paths = TrainPaths(*[Path("unused")] * 6, out_dir=results.model_dir("v", "seed2"))
    assert results.resume_state("v", "seed2") == paths.last


def test_a_run_names_its_seed_and_runs_sort_by_seed():
    """seed_run and run_seed are inverse; seeds sort as numbers (seed2 before seed10, not as text),
    the ensemble after every seed; a folder not of this layout has no seed."""
    assert [seed_run(k) for k in (1, 10)] == ["seed1", "seed10"]
    assert seed_run("{seed}") == "seed{seed}"  # the workflow's wildcard
    assert [run_seed(r) for r in ("seed1", "seed10", ENSEMBLE_RUN, "seed", "seedx", "best")] == [1, 10, None, None,
                                                                                               None, None]
    assert sorted(["seed10", ENSEMBLE_RUN, "seed2", "seed1"], key=run_order) == ["seed1", "seed2", "seed10",
                                                                                 ENSEMBLE_RUN]
