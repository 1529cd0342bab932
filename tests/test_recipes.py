"""The recipes of docs/extending.md, followed to the letter: a metric, a paper table and a corpus
added as the page says, in a copy of the repository (the checkout itself is never edited), and
found in the tables of one tiny workflow run of that copy (issue #43).

Every expected value is worked out here from the run's own files (translations counted, the
served corpus read back) or is a number this test declares.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import ROOT

TINY = ROOT / "tests" / "configs" / "tiny.yaml"
#: what a copy of the repository needs to run the workflow: the Snakefile, its rules, schema and
#: captions, the package and the default config
TREE = ("Snakefile", "workflow", "nmtlib", "config")
SIZES = {"train": 300, "dev": 40, "test": 30}  # the tiny config's synthetic corpus

# -- "Adding a metric": one register(Metric(...)) at the end of nmtlib/report/metrics.py ----------

METRIC = '''

def words_per_sentence(files: RunFiles) -> float | None:
    """Words per sentence of the translation as decoded."""
    hyps = files.hypotheses(RAW)
    return None if not hyps else sum(len(h.split()) for h in hyps) / len(hyps)


register(Metric("words_per_sentence", "test words per sentence", "words per sentence of the test translation as "
                "decoded", words_per_sentence, tables=("summary", "toy_table1")))
'''

# -- "Adding a paper table": an entry in the tuple of TABLES (its caption in it), a module with its builder

TABLE_ENTRY = '''TOY_TABLE1 = PaperTable(
    "toy_table1", LUONG, "Table 1 (toy)", "A toy table of the recipes' test", "the tiny workflow's data; BLEU",
    (
        _r("base", "Base (toy)", bleu=10.0),
        _r("attention", "Base + attention (toy)", bleu=20.0),
    ),
    notes="paper_bleu: the toy paper's number; ours_bleu_before_unk_replace: ours.",
    build="nmtlib.report.toy_table:toy_table1", shows="toy rows of the recipe",
    caption="""\\
**A toy table** of the recipes' test: ``paper_bleu``, the toy paper's BLEU, beside
``ours_bleu_before_unk_replace``, tokenized BLEU of the variant that regenerates the row.
""",
)

'''

TABLE_MODULE = '''"""The builder of the recipes' toy table (docs/extending.md, "Adding a paper table")."""

from __future__ import annotations

import pandas as pd

from nmtlib.report.collect import ExperimentSpec, Ours
from nmtlib.report.paper import PaperTable
from nmtlib.report.tables import Builder


def toy_table1(spec: ExperimentSpec, ours: Ours, table: PaperTable) -> pd.DataFrame:
    b = Builder(spec, ours, table)
    rows = []
    for prow, name in b.each():
        rows.append(b.finish(prow, {
            "row": prow.key, "system": prow.label,
            "paper_bleu": prow.values.get("bleu"),
            "ours_bleu_before_unk_replace": ours.value(name, "bleu_before_unk_replace"),
            "ours_from": b.ours_from(name),
        }, name))
    return pd.DataFrame(rows)
'''

# -- "Adding a corpus": a data set in nmtlib/data/corpora.yaml, its files served over HTTP ---------

CORPUS = "toycorpus"
FILES = [f"{split}.{side}" for split in SIZES for side in ("src", "tgt")]


def corpus_entry(url: str, served: Path) -> str:
    files = "".join(f"      {name}:\n        path: {CORPUS}/{name}\n        url: {url}/{name}\n"
                    f"        sha256: {hashlib.sha256((served / name).read_bytes()).hexdigest()}\n"
                    f"        size: {(served / name).stat().st_size}\n" for name in FILES)
    return (f"\n  {CORPUS}:\n    description: the recipes' test corpus, served over HTTP by the test\n"
            f"    source: tests/test_recipes.py\n    licence: none\n    files:\n{files}")


def follow(path: Path, old: str, new: str) -> None:
    """``old`` replaced by ``new`` in ``path``: where the recipe says to add an entry (once, or the test
    no longer follows the recipe)."""
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


class _Served(http.server.SimpleHTTPRequestHandler):
    requested: list[str]

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        self.requested.append(self.path)


@pytest.fixture(scope="module")
def recipes(tmp_path_factory) -> Path:
    """The tiny workflow of a copy of the repository that follows the three recipes; its results
    folder (the server's requests in ``.requested``)."""
    from nmtlib.data.synthetic import write_corpus

    tree = tmp_path_factory.mktemp("tree")
    for name in TREE:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, tree / name)
    # a metric
    with open(tree / "nmtlib" / "report" / "metrics.py", "a", encoding="utf-8") as f:
        f.write(METRIC)
    # a paper table
    paper = tree / "nmtlib" / "report" / "paper.py"
    follow(paper, "#: every paper table, by name", TABLE_ENTRY + "#: every paper table, by name")
    follow(paper, "SHU_TABLE1, SHU_TABLE3)", "SHU_TABLE1, SHU_TABLE3, TOY_TABLE1)")
    (tree / "nmtlib" / "report" / "toy_table.py").write_text(TABLE_MODULE, encoding="utf-8")
    # a corpus, served from here
    served = tmp_path_factory.mktemp("served")
    write_corpus(served, seed=5, sizes=SIZES)
    requested: list[str] = []
    handler = type("Handler", (_Served,), {"requested": requested})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(served)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    with open(tree / "nmtlib" / "data" / "corpora.yaml", "a", encoding="utf-8") as f:
        f.write(corpus_entry(url, served))

    work = tmp_path_factory.mktemp("work")
    config = yaml.safe_load(TINY.read_text(encoding="utf-8"))
    config["data"] = {"corpus": CORPUS, "src": "xx", "tgt": "yy", "tokenizer": {"src": "none", "tgt": "none"},
                      "vocab_size": config["data"]["vocab_size"],
                      "splits": {split: {"src": f"{split}.src", "tgt": f"{split}.tgt"} for split in SIZES}}
    config["cache_dir"] = str(work / "cache")
    config["variants"]["base"]["paper_row"]["toy_table1"] = "base"
    config["variants"]["global-general-feed"]["paper_row"]["toy_table1"] = "attention"
    (work / "recipes.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    # the copy's nmtlib first, and not the checkout's: `python -m` puts the working folder first on the path
    env = {**os.environ, "PYTHONPATH": str(tree), "no_proxy": "127.0.0.1", "NO_PROXY": "127.0.0.1"}
    command = [sys.executable, "-m", "snakemake", "-s", str(tree / "Snakefile"), "--directory", str(work),
               "--configfile", str(work / "recipes.yaml")]
    try:
        run = subprocess.run([*command, "--cores", "2"], capture_output=True, text=True, timeout=900, env=env,
                             cwd=work)
        assert run.returncode == 0, run.stderr[-4000:]
        report = subprocess.run([*command, "--report", "report.html"], capture_output=True, text=True, timeout=600,
                                env=env, cwd=work)
        assert report.returncode == 0, report.stderr[-3000:]
    finally:
        server.shutdown()
    (work / "served.txt").write_text("\n".join(requested), encoding="utf-8")
    return work


def _results(work: Path) -> Path:
    return work / "results" / "tiny"


def _words_per_sentence(path: Path) -> float:
    lines = path.read_text(encoding="utf-8").splitlines()
    return round(sum(len(line.split()) for line in lines) / len(lines), 4)


def test_a_metric_added_as_the_recipe_says(recipes):
    results = _results(recipes)
    summary = pd.read_csv(results / "tables" / "summary.csv").set_index("variant")
    for name, run in (("base", "seed1"), ("global-general-feed", "seed1"), ("ens", "ensemble")):
        counted = _words_per_sentence(results / "translations" / name / run / "test.beam3.txt")
        assert counted > 0 and summary.loc[name, "words_per_sentence"] == pytest.approx(counted, abs=1e-4), name
    toy = pd.read_csv(results / "tables" / "toy_table1.csv").set_index("row")
    assert toy.loc["base", "ours_words_per_sentence"] == summary.loc["base", "words_per_sentence"]
    assert "ours_words_per_sentence" not in pd.read_csv(results / "tables" / "luong_table4.csv").columns
    # both captions say what it is (their metric columns, written by the report)
    help_text = "words per sentence of the test translation as decoded."
    columns = results / "report" / "columns"
    assert f"- ``words_per_sentence``: {help_text}" in (columns / "summary.rst").read_text(encoding="utf-8")
    assert f"- ``ours_words_per_sentence``: {help_text}" in (columns / "toy_table1.rst").read_text(encoding="utf-8")


def test_a_paper_table_added_as_the_recipe_says(recipes):
    results = _results(recipes)
    toy = pd.read_csv(results / "tables" / "toy_table1.csv")
    summary = pd.read_csv(results / "tables" / "summary.csv").set_index("variant")
    assert toy["row"].tolist() == ["base", "attention"] and toy["paper_bleu"].tolist() == [10.0, 20.0]
    assert toy["ours_from"].tolist() == ["base (1 seed, beam3)", "global-general-feed (1 seed, beam3)"]
    ours = summary["bleu_before_unk_replace"]
    assert toy["ours_bleu_before_unk_replace"].tolist() == [ours["base"], ours["global-general-feed"]]
    md = (results / "tables" / "toy_table1.md").read_text(encoding="utf-8")
    assert md.startswith("# Luong et al. 2015, Table 1 (toy): A toy table of the recipes' test")
    # the HTML report lists it among the paper tables, under its label, with its caption
    page = (recipes / "report.html").read_text(encoding="utf-8")
    assert "toy_table1.html" in page and "toy rows of the recipe" in page and "A toy table" in page


def test_a_corpus_added_as_the_recipe_says(recipes):
    results = _results(recipes)
    served = sorted(re.sub(r"^/", "", p) for p in (recipes / "served.txt").read_text().split())
    assert served == sorted(FILES)  # each file fetched once, over HTTP
    cached = recipes / "cache" / CORPUS
    for name in FILES:  # verified into the cache, then copied into the run
        assert (results / "corpus" / name).read_bytes() == (cached / name).read_bytes()
    assert len((results / "data" / "test.src").read_text(encoding="utf-8").splitlines()) == SIZES["test"]
    header = (results / "tables" / "summary.md").read_text(encoding="utf-8").split("\n\n")[1]
    assert f"{CORPUS} xx→yy, test set of {SIZES['test']} sentences" in header
    assert f"{CORPUS} xx→yy" in (results / "tables" / "toy_table1.md").read_text(encoding="utf-8")
