"""``nmtlib translate`` as the README gives it reproduces the workflow (issue #42, items 1 and 2).

The demo (config/config.yaml) at test size (overrides/smoke.yaml: 12 updates, beam 2;
tests/configs/demo-smoke.yaml: a smaller synthetic pair; tests/configs/demo-smoke-unk.yaml:
vocabularies far below the lexicon, so that most output words are ``<unk>`` and the lexicon
replaces them) trains its Flexible Attention model and decodes the test set through the real
rules. The README's command on that test set must print the workflow's ``.unk.txt`` byte for byte:
the model folder's decode.json carries every option and the dictionary (by path and sha256).
Then n-best lists (scores checked against the model's own log-probability of each hypothesis) and
lines translated as they arrive.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

DEMO_SMOKE = (ROOT / "config" / "config.yaml", ROOT / "config" / "experiments" / "overrides" / "smoke.yaml",
              ROOT / "tests" / "configs" / "demo-smoke.yaml", ROOT / "tests" / "configs" / "demo-smoke-unk.yaml")
RES = "results/demo-smoke"
VARIANT = "flexible"
MODEL = f"{RES}/models/{VARIANT}/seed1/model.pt"
BEAM = yaml.safe_load(DEMO_SMOKE[1].read_text())["decode"]["beam"]
WORKFLOW_OUT = f"{RES}/translations/{VARIANT}/seed1/test.beam{BEAM}"
#: every decoding option a run has (nmtlib.config.run_settings), and the dictionary
OPTIONS = ("beam", "max_len_ratio", "length_norm", "batch_size", "unk_replace", "cuda_graphs", "tf32", "in_flight",
           "max_src_len", "tau", "dictionary")

pytestmark = pytest.mark.slow


def nmtlib(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nmtlib", *args], input=stdin, capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """The test-sized demo's Flexible Attention model, its decode.json and its translations."""
    work = tmp_path_factory.mktemp("translate-demo")
    run = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(work),
                          "--cores", "2", "--configfile", *map(str, DEMO_SMOKE), "--",
                          f"{WORKFLOW_OUT}.unk.txt", f"{RES}/models/{VARIANT}/decode.json"],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-4000:]
    return work


def readme_command() -> str:
    """The README's command that translates a file with a model of an experiment's results."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = re.findall(r"^\S*nmtlib translate --model results/<exp>/models/<variant>/seed1/model\.pt < in\.txt "
                       r"> out\.txt$", text, re.M)
    assert len(lines) == 1, lines
    return lines[0]


def test_the_readmes_command_prints_the_workflows_translations_byte_for_byte(work):
    shutil.copy(work / RES / "data" / "test.src", work / "in.txt")
    command = readme_command().replace("<exp>", "demo-smoke").replace("<variant>", VARIANT)
    command = re.sub(r"^\S*nmtlib", f"{shlex.quote(sys.executable)} -m nmtlib", command)
    run = subprocess.run(command, shell=True, cwd=work, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert (work / "out.txt").read_bytes() == (work / f"{WORKFLOW_OUT}.unk.txt").read_bytes()

    # the comparison means something: the lexicon, not a copy of the source word, replaced <unk>s
    lexicon = dict(line.split("\t") for line in (work / RES / "corpus" / "lexicon.tsv").read_text().splitlines())
    sources = (work / RES / "data" / "test.src").read_text().splitlines()
    raw = (work / f"{WORKFLOW_OUT}.txt").read_text().splitlines()
    replaced = (work / "out.txt").read_text().splitlines()
    translated = [(new, source) for line, after, source in zip(raw, replaced, sources)
                  for old, new in zip(line.split(), after.split()) if old == "<unk>"]
    assert len(translated) > 100
    from_lexicon = [new for new, source in translated if new in lexicon.values() and new not in source.split()]
    assert len(from_lexicon) > len(translated) / 2

    # stderr names every option and where it came from, the dictionary by its sha256
    settings = work / RES / "models" / VARIANT / "decode.json"
    assert f"nmtlib translate: 1 model: results/demo-smoke/models/{VARIANT}/seed1/model.pt" in run.stderr
    line = next(line for line in run.stderr.splitlines() if line.startswith(f"nmtlib translate: from {settings}: "))
    for option in OPTIONS:
        assert re.search(rf"\b{option} ", line), option
    dictionary = work / RES / "corpus" / "lexicon.tsv"
    assert f"dictionary {dictionary} (sha256 {sha256(dictionary)[:12]}…)" in line
    assert f"beam {BEAM}," in line


def test_flags_win_and_say_so_and_an_ensemble_says_how_many_models_decode(work):
    source = (work / RES / "data" / "test.src").read_text().splitlines()[0] + "\n"
    run = nmtlib("translate", "--model", MODEL, "--model", MODEL, "--beam", "3", "--no-unk-replace", stdin=source,
                 cwd=work)
    assert run.returncode == 0, run.stderr
    assert f"nmtlib translate: an ensemble of 2 models: {MODEL}, {MODEL}" in run.stderr
    assert "nmtlib translate: from flags: beam 3, unk_replace false" in run.stderr
    assert "dictionary unused (no replacement)" in run.stderr
    assert "<unk>" in run.stdout  # nothing replaced


def test_a_dictionary_that_changed_or_went_is_refused_in_one_line(work, tmp_path):
    copy = tmp_path / RES
    for rel in (f"models/{VARIANT}/decode.json", f"models/{VARIANT}/seed1/model.pt", "corpus/lexicon.tsv"):
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(work / RES / rel, copy / rel)
    lexicon = copy / "corpus" / "lexicon.tsv"
    recorded = sha256(lexicon)
    with lexicon.open("a") as f:
        f.write("extra\tword\n")
    run = nmtlib("translate", "--model", MODEL, stdin="a\n", cwd=tmp_path)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert (f"error: {lexicon}: sha256 {sha256(lexicon)[:12]}…, but the experiment decoded with sha256 "
            f"{recorded[:12]}…") in run.stderr
    lexicon.unlink()
    run = nmtlib("translate", "--model", MODEL, stdin="a\n", cwd=tmp_path)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert f"the dictionary {lexicon}, which is not there" in run.stderr


def test_n_best_lists_rank_hypotheses_by_the_models_own_probability(work):
    import torch

    from nmtlib.checkpoint import embedded_vocabularies, load_model
    from nmtlib.data.batching import ParallelData
    from nmtlib.train.trainer import evaluate_nll

    k = BEAM + 1
    src = RES + "/data/test.src"
    files = nmtlib("translate", "--model", MODEL, "--src", src, "--out", "nb", "--n-best", str(k), "--beam", str(k),
                   "--no-progress", cwd=work)
    one = nmtlib("translate", "--model", MODEL, "--src", src, "--out", "one", "--beam", str(k), "--no-progress",
                 cwd=work)
    text = nmtlib("translate", "--model", MODEL, "--n-best", str(k), "--beam", str(k), "--no-progress",
                  stdin=(work / src).read_text(), cwd=work)
    assert files.returncode == one.returncode == text.returncode == 0, files.stderr + one.stderr + text.stderr
    sources = (work / src).read_text().splitlines()
    best = (work / "one.unk.txt").read_text().splitlines()
    nbest = [line.split(" ||| ") for line in (work / "nb.nbest.txt").read_text().splitlines()]
    assert text.stdout == (work / "nb.nbest.txt").read_text()  # text mode prints the same list
    assert [int(i) for i, _, _ in nbest] == [i for i in range(len(sources)) for _ in range(k)]
    for i in range(len(sources)):
        ranked = [(t, float(s)) for j, t, s in nbest if int(j) == i]
        assert ranked[0][0] == best[i]  # the first is the translation without --n-best
        assert all(a[1] >= b[1] for a, b in zip(ranked, ranked[1:]))

    # each hypothesis's score is its log-probability under the model, computed here by forced decoding
    model, record = load_model(work / MODEL, torch.device("cpu"))
    src_vocab, tgt_vocab = embedded_vocabularies(record, work / MODEL)
    records = [json.loads(line) for line in (work / "nb.jsonl").read_text().splitlines()]
    checked = 0
    for i, rec in enumerate(records[:10]):
        assert [h["score"] for h in rec["n_best"]] == sorted((h["score"] for h in rec["n_best"]), reverse=True)
        assert len({h["text"] for h in rec["n_best"]}) == k  # k different hypotheses (before replacement)
        for h in rec["n_best"]:
            data = ParallelData([src_vocab.encode(sources[i].split())], [tgt_vocab.encode(h["text"].split())])
            nll, _ = evaluate_nll(model, data, 1, torch.device("cpu"))
            assert h["score"] == pytest.approx(-nll, abs=2e-3), (i, h)
            checked += 1
    assert checked == 10 * k


def test_lines_are_answered_as_they_arrive(work):
    """``(echo A; sleep 6; echo B) | nmtlib translate``: A's translation comes before B is sent."""
    import selectors

    sources = (work / RES / "data" / "test.src").read_text().splitlines()
    expected = (work / f"{WORKFLOW_OUT}.unk.txt").read_text().splitlines()
    proc = subprocess.Popen([sys.executable, "-m", "nmtlib", "translate", "--model", MODEL, "--no-progress"],
                            cwd=work, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        proc.stdin.write(sources[0] + "\n")
        proc.stdin.flush()
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            deadline = time.monotonic() + 240
            while not sel.select(timeout=1) and proc.poll() is None and time.monotonic() < deadline:
                pass
        first = proc.stdout.readline()
        assert first == expected[0] + "\n", proc.stderr.read() if proc.poll() is not None else first
        proc.stdin.write(sources[1] + "\n")
        proc.stdin.close()
        assert proc.stdout.read() == expected[1] + "\n"
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
