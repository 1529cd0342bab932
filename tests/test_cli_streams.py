"""The command line in pipes (issue #42, item 2): ``-`` is standard input in every file argument of
``score`` and ``evaluate`` (and standard output for ``evaluate --out``), two arguments cannot
both read it, and a reader that closes the pipe early (``| head -1``) ends the command quietly.

Each result read from standard input is compared with the same command on the file itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, TINY_TRAIN_SPEC, train_tiny_model

HYP = "the cat sat on the mat\na dog ran in the park today\n"
REF = "the cat sat on a mat\na dog ran in the park\n"
GOLD = "1-1 2-2 3p3\n1-2 2-1\n"
LINKS = "1-1 2-3 3-3\n1-1 2-1\n"
SRC_TGT = "a b c\nd e\n"


def nmtlib(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "nmtlib", *args], input=stdin, capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in (("hyp", HYP), ("ref", REF), ("gold", GOLD), ("links", LINKS), ("src", SRC_TGT),
                       ("tgt", SRC_TGT)):
        out[name] = tmp_path / f"{name}.txt"
        out[name].write_text(text)
    return out


@pytest.mark.parametrize("stdin_arg", ["--hyp", "--ref"])
def test_score_bleu_reads_either_file_from_stdin(files, stdin_arg):
    on_files = nmtlib("score", "bleu", "--tokenized", "--hyp", str(files["hyp"]), "--ref", str(files["ref"]))
    given = {"--hyp": str(files["hyp"]), "--ref": str(files["ref"])}
    given[stdin_arg] = "-"
    piped = nmtlib("score", "bleu", "--tokenized", *[x for kv in given.items() for x in kv],
                   stdin=HYP if stdin_arg == "--hyp" else REF)
    assert on_files.returncode == piped.returncode == 0, piped.stderr
    assert piped.stdout == on_files.stdout and json.loads(piped.stdout.splitlines()[-1])["bleu"] > 0


def test_score_aer_and_bleu_by_length_read_stdin(files):
    for args, name in ((["aer", "--gold", str(files["gold"]), "--hyp", "HYP"], "links"),
                       (["bleu-by-length", "--src", str(files["src"]), "--ref", str(files["ref"]), "--hyp", "HYP"],
                        "hyp")):
        on_files = nmtlib("score", *[str(files[name]) if a == "HYP" else a for a in args])
        piped = nmtlib("score", *["-" if a == "HYP" else a for a in args], stdin=files[name].read_text())
        assert on_files.returncode == piped.returncode == 0, piped.stderr
        # the same numbers; a tool's line may name its input file, which is "-" here
        assert json.loads(piped.stdout.splitlines()[-1]) == json.loads(on_files.stdout.splitlines()[-1])


def test_evaluate_alignment_reads_stdin_and_writes_its_result_to_stdout(files, tmp_path):
    args = ["evaluate", "alignment", "--src", str(files["src"]), "--tgt", str(files["tgt"])]
    on_files = nmtlib(*args, "--gold", str(files["gold"]), "--links", str(files["links"]), "--out",
                      str(tmp_path / "aer.json"))
    piped = nmtlib(*args, "--gold", "-", "--links", str(files["links"]), "--out", "-", stdin=GOLD)
    assert on_files.returncode == piped.returncode == 0, piped.stderr
    assert piped.stdout == (tmp_path / "aer.json").read_text()  # the whole result, no summary line after it
    # AER by hand: sure {1-1, 2-2} and {1-2, 2-1}, possible adds 3-3; links {1-1, 2-3, 3-3} and {1-1, 2-1}
    # |A∩S| = 1 + 1, |A∩P| = 2 + 1, |A| = 5, |S| = 4: AER = 1 − (2 + 3) / (5 + 4)
    assert json.loads(piped.stdout)["aer"] == pytest.approx(1 - 5 / 9)


def test_two_arguments_cannot_both_read_stdin(files):
    run = nmtlib("score", "bleu", "--hyp", "-", "--ref", "-", stdin=HYP)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == "nmtlib score: error: --ref and --hyp read standard input (-): only one file can come from it\n"


@pytest.mark.parametrize("command", [("align", "--links-out", "links.txt"), ("evaluate", "perplexity")],
                         ids=["align", "evaluate-perplexity"])
def test_a_forced_decoding_command_takes_one_input_from_stdin(files, tmp_path, command):
    """``align`` and ``evaluate perplexity`` begin alike (``cli.load_forced_decoding_inputs``): the
    check comes before the model is read (there is none here)."""
    run = nmtlib(*command, "--model", str(tmp_path / "none.pt"), "--src", "-", "--tgt", "-", "--out",
                 str(tmp_path / "out"), stdin=SRC_TGT)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == (f"nmtlib {command[0]}: error: --src and --tgt read standard input (-): only one file can "
                          f"come from it\n")


def test_a_closed_pipe_ends_the_command_quietly(files):
    """``nmtlib score bleu ... | head -1`` where head has gone: no BrokenPipeError traceback."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written: every write meets a closed pipe
    try:
        run = subprocess.run([sys.executable, "-m", "nmtlib", "score", "bleu", "--tokenized", "--hyp",
                              str(files["hyp"]), "--ref", str(files["ref"])], stdout=write, stderr=subprocess.PIPE,
                             text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    finally:
        os.close(write)
    assert (run.returncode, run.stderr) == (128 + 13, "")  # the status of a tool killed by SIGPIPE


@pytest.fixture(scope="module")
def model(tiny_corpus, tmp_path_factory) -> Path:
    return train_tiny_model(tiny_corpus, tmp_path_factory.mktemp("model"), TINY_TRAIN_SPEC)


@pytest.mark.parametrize("stdin_arg", ["--model", "--tgt", "--src-vocab"])
def test_evaluate_perplexity_reads_the_model_the_text_or_a_vocabulary_from_stdin(tiny_corpus, model, stdin_arg):
    given = {"--model": model, "--src": tiny_corpus / "test.src", "--tgt": tiny_corpus / "test.tgt",
             "--src-vocab": tiny_corpus / "vocab.src", "--tgt-vocab": tiny_corpus / "vocab.tgt"}
    args = ["evaluate", "perplexity", "--threads", "1", "--out", "-"]
    on_files = subprocess.run([sys.executable, "-m", "nmtlib", *args, *[str(x) for kv in given.items() for x in kv]],
                              capture_output=True, cwd=ROOT, timeout=300)
    piped = subprocess.run([sys.executable, "-m", "nmtlib", *args,
                            *[x for k, v in given.items() for x in (k, "-" if k == stdin_arg else str(v))]],
                           input=given[stdin_arg].read_bytes(), capture_output=True, cwd=ROOT, timeout=300)
    assert on_files.returncode == piped.returncode == 0, piped.stderr.decode()
    assert json.loads(piped.stdout) == json.loads(on_files.stdout) and json.loads(piped.stdout)["ppl"] > 1


def test_align_and_perplexity_use_the_vocabularies_the_model_carries(tiny_corpus, model, tmp_path):
    """As ``nmtlib translate`` does: ``--src-vocab``/``--tgt-vocab`` may be left out."""
    vocabs = ["--src-vocab", str(tiny_corpus / "vocab.src"), "--tgt-vocab", str(tiny_corpus / "vocab.tgt")]
    text = ["--src", str(tiny_corpus / "test.src"), "--tgt", str(tiny_corpus / "test.tgt"), "--threads", "1"]
    for name, extra in (("given", vocabs), ("carried", [])):
        ppl = nmtlib("evaluate", "perplexity", "--model", str(model), *text, "--out", "-", *extra)
        align = nmtlib("align", "--model", str(model), *text, "--out", str(tmp_path / f"{name}.npz"),
                       "--links-out", str(tmp_path / f"{name}.links"), *extra)
        assert ppl.returncode == align.returncode == 0, ppl.stderr + align.stderr
        (tmp_path / f"{name}.json").write_text(ppl.stdout)
    assert json.loads((tmp_path / "given.json").read_text()) == json.loads((tmp_path / "carried.json").read_text())
    assert (tmp_path / "given.links").read_text() == (tmp_path / "carried.links").read_text()
    one = nmtlib("align", "--model", str(model), *text, "--out", str(tmp_path / "x.npz"), "--links-out",
                 str(tmp_path / "x.links"), *vocabs[:2])
    assert one.returncode == 2 and one.stderr == ("nmtlib align: error: give both vocabulary files (--src-vocab and "
                                                  "--tgt-vocab), or neither for the model's own\n")
