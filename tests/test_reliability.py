"""Faults and bad input: one test per row of docs/reliability.md that no other test file covers.

Rows already covered elsewhere (SIGKILL/SIGTERM resume, NaN, download faults, line-count
mismatch, invalid UTF-8, ...) point at those tests in the table; nothing here duplicates them.
Every fault is real: a real tmpfs that fills up, real signals to a real ``snakemake``, a real
pickle payload, real paths with spaces and ``;``. The one injected fault is the out-of-GPU-memory
error (there is no GPU here): the real ``torch.cuda.OutOfMemoryError`` is raised inside the real
model's forward pass, where CUDA would raise it.

The tests named B1–B8 in docs/reliability.md were written against bugs this suite found; the
bugs are fixed and the tests keep them fixed.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import io
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import yaml

from nmtlib.errors import NmtlibError
from nmtlib.cli import main as nmtlib_main
from nmtlib import checkpoint

from conftest import (ROOT, SHARED, SMALL, TINY_TRAIN_SPEC, keeping_checkpoints, restored_torch_switches, snakemake_jobs,
                      trained_variants)

SNAKEFILE = ROOT / "Snakefile"
TINY = ROOT / "tests" / "configs" / "tiny.yaml"
#: a name that runs a command if a shell ever sees it unquoted (the file it would create is
#: looked for afterwards): a space, `;` and a command substitution
HOSTILE = "a b; touch INJECTED; $(touch SUBSTITUTED)"
INJECTED_NAMES = ("INJECTED", "SUBSTITUTED")


def snakemake(workdir: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(workdir), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def tiny_config(change=None) -> dict:
    config = yaml.safe_load(TINY.read_text())
    if change is not None:
        change(config)
    return config


def write_yaml(path: Path, config: dict) -> Path:
    # keep the key order: Snakemake compares dict-valued params by their repr (B8)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def shell_commands(log: str) -> list[list[str]]:
    """The commands ``snakemake -p`` printed, split as the shell splits them."""
    prefix = "Shell command: "
    return [shlex.split(line[len(prefix):]) for line in log.splitlines() if line.startswith(prefix)]


def injected_files(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*") if p.name in INJECTED_NAMES]


@pytest.fixture
def torch_globals():
    """In-process training flips process-wide torch switches: put them back."""
    with restored_torch_switches():
        yield


# == Config ====================================================================================

def _corpus(name: str, test_src: str = "test_2016_flickr.de.gz"):
    def change(c):
        c["data"] = {"corpus": name, "splits": {
            "train": {"src": "train.de.gz", "tgt": "train.en.gz"},
            "dev": {"src": "val.de.gz", "tgt": "val.en.gz"},
            "test": {"src": test_src, "tgt": "test_2016_flickr.en.gz"},
        }}
    return change


@pytest.mark.parametrize("change, expected", [
    pytest.param(lambda c: c["variants"]["base"].update(windoww=3),
                 ["invalid configuration: variants.base: unknown key 'windoww' (did you mean 'window'?); allowed keys:",
                  "'window'"],
                 id="unknown-variant-option"),
    pytest.param(_corpus("wmt99"), ["invalid configuration: data.corpus: unknown data set 'wmt99'",
                                    "valid names:", "multi30k"], id="unknown-data-set"),
    pytest.param(_corpus("multi30k", "test_2099.de.gz"),
                 ["invalid configuration: data.splits.test.src: 'test_2099.de.gz' is not a file of data set "
                  "'multi30k'", "cannot be checksum-verified"], id="file-not-in-data-set"),
    pytest.param(lambda c: c["variants"].update({"x; touch INJECTED": {"attention": "none"}}),
                 ["invalid configuration: variants: 'x; touch INJECTED' does not match "
                  "'^[A-Za-z0-9][A-Za-z0-9._+-]*$'"], id="variant-name-with-semicolon"),
    pytest.param(lambda c: c.setdefault("train", {}).update(max_steps=-1),
                 ["invalid configuration: train.max_steps: -1 is less than the minimum of 0"], id="negative-max-steps"),
    pytest.param(lambda c: c["variants"]["base"].setdefault("train", {}).update(lr="1e-4"),
                 ["invalid configuration: variants.base.train.lr: '1e-4' is not of type 'number'; YAML 1.1 reads "
                  "1e-4 as a string (a number needs a dot and a signed exponent): write 1.0e-4"],
                 id="yaml-1.1-exponent"),
    # checked before any job, each named in one line (issue #41): the data set before its splits
    pytest.param(lambda c: c.update(data={"corpus": "multi30kk"}),
                 ["invalid configuration: data.corpus: unknown data set 'multi30kk' (did you mean 'multi30k'?); "
                  "valid names: synthetic, "], id="unknown-data-set-without-splits"),
    pytest.param(lambda c: c["data"].update(max_ratio=0), ["invalid configuration: data.max_ratio: 0 is less than the "
                                                           "minimum of 1"], id="max-ratio-zero"),
    pytest.param(lambda c: c["data"].update(max_ratio=-1), ["data.max_ratio: -1 is less than the minimum of 1"],
                 id="max-ratio-negative"),
    pytest.param(lambda c: c["data"].update(max_ratio=float("nan")),
                 ["invalid configuration: data.max_ratio: must be a finite number, got nan"], id="max-ratio-nan"),
    pytest.param(lambda c: c["data"].update(max_len=float("inf")),
                 ["invalid configuration: data.max_len: must be a finite number, got inf"], id="infinite-data-option"),
    pytest.param(lambda c: c["variants"].update({"v" * 300: {"attention": "none"}}),
                 ["invalid configuration: variants: '" + "v" * 300 + "' is too long"], id="variant-name-too-long"),
    pytest.param(lambda c: c.update(only_variants=[]),
                 ["invalid configuration: only_variants: an empty list names no variant; give variant names, or "
                  "null to run all"], id="only-variants-empty"),
    pytest.param(lambda c: c.setdefault("decode", {}).update(beam=100000),
                 ["invalid configuration: decode.beam: 100000 is greater than the maximum of 1000"], id="beam-too-large"),
    pytest.param(lambda c: c.update(ensembles={"ens": ["base", "global-general-feed", "base"]}),
                 ["invalid configuration: ensembles.ens: ['base'] named more than once"], id="ensemble-member-twice"),
    pytest.param(lambda c: c["variants"]["base"].setdefault("train", {}).update(lr="0.1"),
                 ["invalid configuration: variants.base.train.lr: '0.1' is not of type 'number'; '0.1' is quoted, so "
                  "it is a string: write 0.1 without quotes"], id="quoted-number"),
])
def test_config_error_names_the_key_before_any_job(tmp_path, change, expected):
    config = write_yaml(tmp_path / "config.yaml", tiny_config(change))
    run = snakemake(tmp_path, "-n", "--configfile", str(config), timeout=120)
    message = run.stdout + run.stderr
    assert run.returncode != 0
    for part in expected:
        assert part in message, message[-3000:]
    assert not (tmp_path / "results").exists() and not injected_files(tmp_path)


# One definition of each option (nmtlib/config/variant.py) checks it wherever it comes in: the workflow
# config, ``nmtlib train --set`` and the flags of ``nmtlib translate``. Expected messages by hand.
ENTRY_POINT_CASES = [
    # (section, key, bad value, the workflow's message, the CLI's arguments, the CLI's message)
    ("train", "max_steps", -1, "train.max_steps: -1 is less than the minimum of 0",
     ["--set", "max_steps=-1"], "--set max_steps=-1: must be at least 0, got -1"),
    ("train", "clip", 0, "train.clip: 0 is less than or equal to the minimum of 0",
     ["--set", "clip=0"], "--set clip=0: must be greater than 0, got 0"),
    ("train", "checkpoint_every", 0, "train.checkpoint_every: 0 is less than the minimum of 1",
     ["--set", "checkpoint_every=0"], "--set checkpoint_every=0: must be at least 1, got 0"),
    ("train", "batch_size", 0, "train.batch_size: 0 is less than the minimum of 1",
     ["--set", "batch_size=0"], "--set batch_size=0: must be at least 1, got 0"),
    ("train", "lr", float("nan"), "variants.base.train.lr: must be a finite number, got nan",
     ["--set", "lr=NaN"], "--set lr=NaN: must be a finite number, got nan"),
    ("decode", "beam", 0, "decode.beam: 0 is less than the minimum of 1",
     ["--beam", "0"], "argument --beam: must be at least 1, got 0"),
    ("decode", "batch_size", -1, "decode.batch_size: -1 is less than the minimum of 1",
     ["--batch-size", "-1"], "argument --batch-size: must be at least 1, got -1"),
    ("decode", "max_len_ratio", 0, "decode.max_len_ratio: 0 is less than or equal to the minimum of 0",
     ["--max-len-ratio", "0"], "argument --max-len-ratio: must be greater than 0, got 0.0"),
    ("decode", "max_src_len", 0, "decode.max_src_len: 0 is less than the minimum of 1",
     ["--max-src-len", "0"], "argument --max-src-len: must be at least 1, got 0"),
    ("decode", "taus", [-1], "decode.taus.0: -1 is less than or equal to the minimum of 0",
     ["--tau", "-1"], "argument --tau: must be greater than 0, got -1.0"),
    ("decode", "taus", [float("nan")], "variants.base.decode.taus: must be a finite number, got nan",
     ["--tau", "nan"], "argument --tau: must be a finite number, got nan"),
]


@pytest.mark.parametrize("section, key, value, config_message, argv, cli_message", ENTRY_POINT_CASES,
                         ids=[f"{c[0]}.{c[1]}={c[2]}" for c in ENTRY_POINT_CASES])
def test_one_definition_checks_an_option_at_every_entry_point(tiny_corpus, tmp_path, capsys, section, key, value,
                                                              config_message, argv, cli_message):
    from nmtlib.config import ConfigError
    from nmtlib.workflow_config import validate_config

    config = tiny_config()
    config.setdefault(section, {})[key] = value
    with pytest.raises(ConfigError) as err:
        validate_config(config, ROOT / "workflow" / "schemas" / "config.schema.yaml")
    assert config_message in str(err.value)

    if section == "train":
        cmd = ["train", "--variant-json", json.dumps({"name": "base", "options": {"attention": "none",
                                                                                   "input_feed": False}}),
               "--train-src", str(tiny_corpus / "train.src"), "--train-tgt", str(tiny_corpus / "train.tgt"),
               "--dev-src", str(tiny_corpus / "dev.src"), "--dev-tgt", str(tiny_corpus / "dev.tgt"),
               "--src-vocab", str(tiny_corpus / "vocab.src"), "--tgt-vocab", str(tiny_corpus / "vocab.tgt"),
               "--out", str(tmp_path / "model"), "--no-progress", *argv]
    else:
        cmd = ["translate", "--model", str(tmp_path / "model.pt"), "--src", str(tiny_corpus / "test.src"),
               "--src-vocab", str(tiny_corpus / "vocab.src"), "--tgt-vocab", str(tiny_corpus / "vocab.tgt"),
               "--out", str(tmp_path / "out"), *argv]
    try:
        code = nmtlib_main(cmd)
    except SystemExit as exit_:  # argparse's own error exit
        code = exit_.code
    assert code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip() and not line.startswith("usage")
             and not line.startswith(" ")]
    assert lines == [f"nmtlib {cmd[0]}: error: {cli_message}"]
    assert not (tmp_path / "model").exists() and not list(tmp_path.glob("out*"))


def test_set_names_an_unknown_key_and_reads_numbers_as_json(tiny_corpus, tmp_path, capsys):
    from nmtlib.commands.train import load_variant

    spec = json.dumps({"name": "base", "options": {"attention": "none", "input_feed": False}})
    with pytest.raises(NmtlibError, match=r"^--set lr_decay=0.5: unknown option 'lr_decay'; valid options: "
                                          r"\['batch_size', .*'decay_factor'"):
        load_variant(spec, ["lr_decay=0.5"])
    # JSON first: 1e-4 is a number here, where YAML 1.1 (the config file) would read a string
    variant = load_variant(spec, ["lr=1e-4", "bf16=true", "init_range=null", "optimizer=adam"])
    assert (variant.train.lr, variant.train.bf16, variant.train.init_range, variant.train.optimizer) == (
        0.0001, True, None, "adam")


#: writes that are not through ``atomic_write`` on purpose: the sink is an atomic file object, or
#: the file lies in a temporary folder that is renamed into place as a whole
_PLAIN_WRITES_ALLOWED = {
    ("nmtlib/atomic.py", None),
    ("nmtlib/checkpoint.py", "torch.save(obj, f)"),
    ("nmtlib/report/figures.py", 'fig.savefig(drawn, format="png"'),  # a BytesIO: the file goes through atomic_write
    ("nmtlib/commands/align.py", "np.savez_compressed(f,"),
    ("nmtlib/data/archives.py", 'open(dst, "w"'),  # sgm_to_text: its callers pass an atomic temp name
    ("nmtlib/data/archives.py", "(tmp / MARKER).write_text("),  # inside the folder renamed into place
}


def test_every_output_is_written_through_atomic_write():
    """A plain ``open(…, "w")``, ``write_text``, ``savefig`` or ``torch.save`` to a path can leave a
    half file that a rerun takes as finished; every writer in nmtlib goes through atomic_write."""
    pattern = re.compile(r"write_text\(|write_bytes\(|open\([^)]*[\"']w|savefig\(|savez(_compressed)?\(|torch\.save\(")
    found = []
    for path in sorted((ROOT / "nmtlib").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line) and not any(
                    rel == f and (snippet is None or snippet in line) for f, snippet in _PLAIN_WRITES_ALLOWED):
                found.append(f"{rel}:{number}: {line.strip()}")
    assert found == []


@pytest.mark.parametrize("content, reason", [
    (b"a\nb\n", "a vocabulary starts with ('<pad>', '<unk>', '<bos>', '<eos>'), got ['a', 'b']"),
    (b"<pad>\n<unk>\n<bos>\n<eos>\nHaus\nHaus\n", "line 6: 'Haus' is already on line 5: a word appears once"),
    (b"<pad>\n<unk>\n<bos>\n<eos>\n\xff\xfe\n", ":5: invalid UTF-8 at byte 0 of the line (invalid start byte)"),
], ids=["no-specials", "duplicate-word", "binary"])
def test_a_file_that_is_not_a_vocabulary_is_named_with_its_line(tiny_corpus, tmp_path, capsys, content, reason):
    bad = tmp_path / "vocab.src"
    bad.write_bytes(content)
    code = nmtlib_main(["translate", "--model", str(tmp_path / "model.pt"), "--src", str(tiny_corpus / "test.src"),
                        "--src-vocab", str(bad), "--tgt-vocab", str(tiny_corpus / "vocab.tgt"),
                        "--out", str(tmp_path / "out"), "--no-progress"])
    assert code == 2
    # an undecodable line is named by the one reader of text, as in every other input (nmtlib.files)
    assert capsys.readouterr().err.strip() == (f"nmtlib translate: error: {bad}{reason}" if "UTF-8" in reason else
                                               f"nmtlib translate: error: {bad}: not a vocabulary: {reason} (write "
                                               f"one with nmtlib vocab)")
    assert not list(tmp_path.glob("out*"))


@pytest.mark.parametrize("command", [["train"], ["translate"], ["align"], ["evaluate", "perplexity"]])
def test_zero_threads_is_an_error_not_all_cores(capsys, command):
    with pytest.raises(SystemExit) as exit_:
        nmtlib_main([*command, "--threads", "0"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"nmtlib {' '.join(command)}: error: argument --threads: must be at least 1, got 0")


def test_yaml_python_tags_are_refused_by_every_yaml_reader(tmp_path):
    from nmtlib.config import ConfigError
    from nmtlib.data.corpora import load_registry
    from nmtlib.workflow_config import load_experiment

    marker = tmp_path / "YAML_PAYLOAD_RAN"
    payload = f'!!python/object/apply:os.system ["touch {marker}"]'
    # the workflow config: Snakemake reads it (yte, a safe loader) before the Snakefile runs
    config = tmp_path / "config.yaml"
    config.write_text(f"experiment: {payload}\ndata: {{corpus: synthetic}}\nvariants: {{base: {{}}}}\n")
    run = snakemake(tmp_path, "-n", "--configfile", str(config), timeout=120)
    assert run.returncode != 0
    assert "Config file is not valid JSON or YAML" in run.stdout + run.stderr
    # nmtlib's own YAML readers (safe loaders) name the file, the line and the tag: the experiment
    # config as nmtlib train --config reads it
    with pytest.raises(ConfigError, match=rf"{re.escape(str(config))}: invalid YAML: could not determine a "
                                          r"constructor for the tag 'tag:yaml.org,2002:python/object/apply:os.system'"
                                          r".* line 1"):
        load_experiment(config)
    registry = tmp_path / "corpora.yaml"
    registry.write_text(f"datasets:\n  toy: {payload}\n")
    with pytest.raises(NmtlibError, match=rf"{re.escape(str(registry))}:2: invalid YAML"):
        load_registry(registry)
    assert not marker.exists() and not (tmp_path / "results").exists()


# == Corpus ====================================================================================

def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def _prepare(tmp_path: Path, src: Path, tgt: Path, name: str, *options: str) -> int:
    return nmtlib_main([
        "prepare", "--src", str(src), "--tgt", str(tgt), "--src-lang", "en", "--tgt-lang", "de",
        "--src-tokenizer", "moses", "--tgt-tokenizer", "moses", "--no-escape",
        "--src-out", str(tmp_path / f"{name}.src"), "--tgt-out", str(tmp_path / f"{name}.tgt"),
        "--stats-out", str(tmp_path / f"{name}.json"), *options,
    ])


def test_a_10000_token_line_is_dropped_and_counted_in_training_and_kept_in_test(tmp_path, capsys):
    huge_src = " ".join(f"w{i}" for i in range(10_000))
    huge_tgt = " ".join(f"v{i}" for i in range(10_000))
    src, tgt = tmp_path / "raw.en", tmp_path / "raw.de"
    src.write_text(f"A cat.\n{huge_src}\nA dog.\n", encoding="utf-8")
    tgt.write_text(f"Eine Katze.\n{huge_tgt}\nEin Hund.\n", encoding="utf-8")
    # training split (the workflow passes --max-len data.max_len --drop-empty): dropped, counted
    assert _prepare(tmp_path, src, tgt, "train", "--max-len", "50", "--drop-empty") == 0
    assert _lines(tmp_path / "train.src") == ["A cat .", "A dog ."]
    assert json.loads((tmp_path / "train.json").read_text()) == {
        "read": 3, "kept": 2, "dropped_long": 1, "dropped_empty": 0, "dropped_ratio": 0}
    assert "read 3, kept 2, dropped 1 (empty 0, long 1, ratio 0)" in capsys.readouterr().err
    # test split (no filter): kept whole, line i stays line i
    assert _prepare(tmp_path, src, tgt, "test") == 0
    test_src, test_tgt = _lines(tmp_path / "test.src"), _lines(tmp_path / "test.tgt")
    assert [len(line.split()) for line in test_src] == [3, 10_000, 3]
    assert test_src[1] == huge_src and test_tgt[1] == huge_tgt


def test_an_empty_split_is_an_error_naming_both_files(tmp_path, capsys):
    src, tgt = tmp_path / "empty.en", tmp_path / "empty.de"
    src.write_text("")
    tgt.write_text("")
    assert _prepare(tmp_path, src, tgt, "test") == 2
    err = capsys.readouterr().err
    assert f"nmtlib prepare: error: no sentence pairs in {src} / {tgt}: both files are empty" in err
    # a training split that the filters empty completely
    src.write_text("one two three\nfour five six\n")
    tgt.write_text("eins zwei\ndrei\n")
    assert _prepare(tmp_path, src, tgt, "train", "--max-len", "2") == 2
    err = capsys.readouterr().err
    assert (f"no sentence pairs in {src} / {tgt}: every pair was dropped: read 2, kept 0, dropped 2 "
            f"(empty 0, long 2, ratio 0)") in err
    # nothing was written that a later step could mistake for a prepared split
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.de", "empty.en"]


def test_scoring_an_empty_test_set_is_an_error(tmp_path, capsys):
    for name in ("ref", "src", "hyp.txt", "hyp.unk.txt", "hyp.jsonl"):
        (tmp_path / name).write_text("")
    out = tmp_path / "score.json"
    rc = nmtlib_main(["evaluate", "translation", "--hyp", str(tmp_path / "hyp"), "--ref", str(tmp_path / "ref"),
                      "--src", str(tmp_path / "src"), "--out", str(out)])
    assert rc == 2
    assert f"{tmp_path / 'ref'} is empty" in capsys.readouterr().err and not out.exists()


def test_training_on_an_empty_corpus_is_an_error(tiny_corpus, tmp_path, torch_globals, capsys):
    (tmp_path / "train.src").write_text("")
    (tmp_path / "train.tgt").write_text("")
    rc = nmtlib_main([
        "train", "--variant-json", json.dumps(TRAIN_SPEC), "--threads", "1", "--no-progress",
        "--train-src", str(tmp_path / "train.src"), "--train-tgt", str(tmp_path / "train.tgt"),
        "--dev-src", str(tiny_corpus / "dev.src"), "--dev-tgt", str(tiny_corpus / "dev.tgt"),
        "--src-vocab", str(tiny_corpus / "vocab.src"), "--tgt-vocab", str(tiny_corpus / "vocab.tgt"),
        "--out", str(tmp_path / "model"),
    ])
    assert rc == 2 and "train.src" in capsys.readouterr().err
    assert not (tmp_path / "model" / "model.pt").exists()


#: one model per attention score (and the local/flexible mechanisms), at toy size
LONG_SOURCE_VARIANTS = {
    "global-dot": dict(SMALL, layers=1, attention="global", score="dot"),
    "global-general": dict(SMALL, layers=1, attention="global", score="general"),
    "global-concat": dict(SMALL, layers=1, attention="global", score="concat"),
    "rnnsearch-additive": dict(SMALL, arch="rnnsearch", output_size=16),
    "global-location": dict(SMALL, layers=1, attention="global", score="location", max_positions=60),
    "local-m-general": dict(SMALL, layers=1, attention="local-m", score="general", window=3),
    "local-p-general": dict(SMALL, layers=1, attention="local-p", score="general", window=3),
    "shu-flexible": dict(SMALL, arch="shu", attention="flexible", output_size=16),
}


@pytest.mark.parametrize("name", LONG_SOURCE_VARIANTS)
def test_a_test_sentence_longer_than_any_training_sentence_decodes(tiny_corpus, tmp_path, name):
    from nmtlib.config import resolve_variant
    from nmtlib.data.batching import ParallelData
    from nmtlib.files import read_lines
    from nmtlib.data.vocab import Vocabulary
    from nmtlib.decode.translate import DecodeOptions, decode_data
    from nmtlib.models.builder import build_model, init_uniform

    train = read_lines(tiny_corpus / "train.src")
    longest = max(len(line.split()) for line in train)
    words = " ".join(train).split()
    long_line = " ".join(words[:200])
    assert len(long_line.split()) == 200 > 3 * longest
    src = tmp_path / "test.src"
    src.write_text(f"\n{long_line}\n{train[0]}\n", encoding="utf-8")  # an empty line too
    sv, tv = Vocabulary.load(tiny_corpus / "vocab.src"), Vocabulary.load(tiny_corpus / "vocab.tgt")
    variant = resolve_variant(name, LONG_SOURCE_VARIANTS[name])
    torch.manual_seed(0)
    model = build_model(variant.model, len(sv), len(tv))
    init_uniform(model, 0.1)
    data = ParallelData.load(src, None, sv, tv)
    with torch.no_grad():
        hyps, _ = decode_data([model.eval()], data, DecodeOptions(beam=3, max_len_ratio=0.1, batch_size=3),
                              torch.device("cpu"))
    # back in input order (decoding sorts by length), and no weight on another sentence's padding;
    # an empty source line gets an empty translation, the model not run on it (issue #41)
    blank = hyps[0]
    assert (blank.tokens, blank.score, blank.attention.size) == ([], 0.0, 0)
    for h, length in zip(hyps[1:], [200, len(train[0].split())]):
        assert torch.isfinite(torch.tensor(h.score)) and len(h.tokens) <= math.ceil(0.1 * length) + 10
        assert h.attention.shape[1] == 200 and (h.attention[:, length:] == 0).all()
        assert (h.attention >= 0).all() and torch.isfinite(torch.from_numpy(h.attention)).all()
    attention = hyps[1].attention
    if variant.model.score == "location":
        # L_max = max_positions: the location score has no weight for positions past it
        assert (attention[:, 60:] == 0).all()
        assert attention[:, :60].sum(1) == pytest.approx(1.0, abs=1e-5)
    elif variant.model.attention == "global":
        assert (attention[:, 60:].sum() > 0) and attention.sum(1) == pytest.approx(1.0, abs=1e-5)


# == Training ==================================================================================

TRAIN_SPEC = keeping_checkpoints(TINY_TRAIN_SPEC)  # tests read the resume state of finished runs


def train_args(corpus: Path, out: Path) -> list[str]:
    return [
        "train", "--variant-json", json.dumps(TRAIN_SPEC), "--threads", "1", "--no-progress",
        "--train-src", str(corpus / "train.src"), "--train-tgt", str(corpus / "train.tgt"),
        "--dev-src", str(corpus / "dev.src"), "--dev-tgt", str(corpus / "dev.tgt"),
        "--src-vocab", str(corpus / "vocab.src"), "--tgt-vocab", str(corpus / "vocab.tgt"),
        "--out", str(out),
    ]


def train_in_process(corpus: Path, out: Path) -> tuple[int | str, str]:
    """``nmtlib train`` in this process (no interpreter start-up): exit code, or the exception
    that would end the command with a traceback, and what it printed on stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            rc: int | str = nmtlib_main(train_args(corpus, out))
        except Exception as exc:  # noqa: BLE001 — the command would die with this traceback
            rc = f"uncaught {type(exc).__name__}"
            print("".join(traceback.format_exception(exc)), file=sys.stderr)
    return rc, err.getvalue()


def same_weights(a: Path, b: Path) -> bool:
    wa, wb = checkpoint.load(a)["model"], checkpoint.load(b)["model"]
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


@pytest.fixture(scope="module")
def disk_full(tiny_corpus, tmp_path_factory) -> SimpleNamespace:
    """A training run whose folder is a real tmpfs with room for one checkpoint but not for the
    temporary copy of the next; then the same run resumed once there is room again."""
    base = tmp_path_factory.mktemp("diskfull")
    with restored_torch_switches():
        rc, err = train_in_process(tiny_corpus, base / "reference")
        assert rc == 0, err
        size = (base / "reference" / "checkpoints" / "last.pt").stat().st_size
        mnt = base / "small disk"
        mnt.mkdir()
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size * 3 // 2 + 64 * 1024}", "tmpfs",
                                  str(mnt)], capture_output=True, text=True)
        if mounted.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs (needs root): {mounted.stderr.strip()}")
        try:
            out = mnt / "run"
            rc, err = train_in_process(tiny_corpus, out)
            facts = SimpleNamespace(
                returncode=rc, stderr=err,
                files=sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()),
                step=checkpoint.load(out / "checkpoints" / "last.pt")["step"],
            )
            subprocess.run(["mount", "-o", f"remount,size={size * 8}", str(mnt)], check=True)  # space freed
            facts.resumed_returncode, facts.resumed_stderr = train_in_process(tiny_corpus, out)
            facts.identical = facts.resumed_returncode == 0 and same_weights(out / "model.pt",
                                                                             base / "reference" / "model.pt")
        finally:
            if subprocess.run(["umount", str(mnt)]).returncode != 0:
                subprocess.run(["umount", "-l", str(mnt)])
    return facts


def test_disk_full_while_writing_a_checkpoint_keeps_the_previous_one(disk_full):
    assert disk_full.returncode == 2
    assert "No space left on device" in disk_full.stderr
    # the checkpoint of step 3 is intact, no temporary file is left, no model.pt pretends to be done
    assert disk_full.step == 3
    assert disk_full.files == ["checkpoints/last.pt", "env.json", "train_log.csv"]
    # once there is room again the run resumes from it and ends exactly where an undisturbed run ends
    assert disk_full.resumed_returncode == 0, disk_full.resumed_stderr
    assert "resuming from" in disk_full.resumed_stderr and "step 3" in disk_full.resumed_stderr
    assert disk_full.identical


def test_disk_full_error_is_one_line_naming_the_checkpoint(disk_full):
    assert disk_full.returncode == 2  # one "nmtlib train: error: ..." line, not a traceback
    assert "checkpoints/last.pt" in disk_full.stderr and "No space left on device" in disk_full.stderr


def _oom_in(mode: str):
    """A forward pre-hook that raises CUDA's real out-of-memory error in the 4th training forward
    pass (after the checkpoint of step 3), or in the first evaluation pass."""
    from nmtlib.models.seq2seq import Seq2Seq

    seen = {"train": 0}

    def hook(module, args):
        if not isinstance(module, Seq2Seq):
            return
        if module.training:
            seen["train"] += 1
        if (mode == "update" and module.training and seen["train"] == 4) or (mode == "eval" and not module.training):
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (injected)")

    return torch.nn.modules.module.register_module_forward_pre_hook(hook)


def _train_with_oom(mode, corpus, out) -> int | str:
    handle = _oom_in(mode)
    try:
        return nmtlib_main(train_args(corpus, out))
    except torch.cuda.OutOfMemoryError:
        return "uncaught OutOfMemoryError"
    finally:
        handle.remove()


def test_out_of_gpu_memory_names_the_batch_size_to_lower(tiny_corpus, tmp_path, torch_globals, capsys):
    assert _train_with_oom("update", tiny_corpus, tmp_path) == 2
    err = capsys.readouterr().err
    assert re.search(r"nmtlib train: error: out of GPU memory on a batch of \d+ sentences \(\d+ target tokens\); "
                     r"lower train.batch_size \(now 32\)", err), err
    assert checkpoint.load(tmp_path / "checkpoints" / "last.pt")["step"] == 3  # the last good state
    assert not (tmp_path / "model.pt").exists()


def test_out_of_gpu_memory_during_dev_evaluation_names_the_batch_size(tiny_corpus, tmp_path, torch_globals,
                                                                       capsys):
    assert _train_with_oom("eval", tiny_corpus, tmp_path) == 2
    assert "train.batch_size" in capsys.readouterr().err


def test_rerunning_a_finished_max_steps_run_trains_no_further(tiny_corpus, tmp_path, torch_globals):
    assert nmtlib_main(train_args(tiny_corpus, tmp_path)) == 0
    (tmp_path / "model.pt").unlink()  # what Snakemake does before it reruns the job
    assert nmtlib_main(train_args(tiny_corpus, tmp_path)) == 0
    assert checkpoint.load(tmp_path / "checkpoints" / "last.pt")["step"] == 6


def test_a_corrupt_last_checkpoint_is_named_kept_aside_and_training_starts_afresh(
        tiny_corpus, tmp_path, torch_globals, capsys):
    last = tmp_path / "checkpoints" / "last.pt"
    last.parent.mkdir()
    last.write_bytes(b"PK\x03\x04 cut short by a copy that did not finish")
    try:
        rc = nmtlib_main(train_args(tiny_corpus, tmp_path))
    except Exception as err:  # noqa: BLE001 — what the user would see as a traceback
        rc = f"uncaught {type(err).__name__}: {err}"
    err = capsys.readouterr().err
    assert rc == 0 and f"{last} cannot be read" in err and "starting afresh" in err
    corrupt = tmp_path / "checkpoints" / "last.corrupt.pt"
    assert corrupt.read_bytes().startswith(b"PK\x03\x04 cut short")  # kept for inspection, not deleted
    assert checkpoint.load(last)["step"] == 6


# == Decoding and scoring =====================================================================

def _translation(tmp_path: Path, hyps: list[str], refs: list[str]) -> list[str]:
    prefix = tmp_path / "test.beam3"
    for ext in (".txt", ".unk.txt"):
        Path(f"{prefix}{ext}").write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
    details = [{"scores_computed": 4, "hypothesis_steps": 2, "time_ms": 1.0, "length": len(h.split())} for h in hyps]
    Path(f"{prefix}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in details))
    (tmp_path / "ref").write_text("".join(r + "\n" for r in refs))
    (tmp_path / "src").write_text("".join(r + "\n" for r in refs))
    return ["evaluate", "translation", "--hyp", str(prefix), "--ref", str(tmp_path / "ref"),
            "--src", str(tmp_path / "src"), "--out", str(tmp_path / "score.json")]


def test_empty_hypothesis_lines_are_scored_in_place(tmp_path):
    refs = ["a b c d", "e f g h", "i j k l"]
    assert nmtlib_main(_translation(tmp_path, ["a b c d", "", "i j k l"], refs)) == 0
    score = json.loads((tmp_path / "score.json").read_text())
    assert score["sentences"] == 3
    bleu = score["bleu"]
    # every hypothesis n-gram matches its own reference (nothing shifted); only the brevity penalty bites
    assert bleu["precisions"] == [100.0] * 4 and (bleu["hyp_len"], bleu["ref_len"]) == (8, 12) and bleu["bp"] < 1


def test_a_hypothesis_file_shorter_than_the_reference_fails_and_keeps_the_old_score(tmp_path, capsys):
    args = _translation(tmp_path, ["a b c d", "e f g h"], ["a b c d", "e f g h", "i j k l"])
    (tmp_path / "score.json").write_text('{"bleu": "from the previous, complete run"}\n')
    assert nmtlib_main(args) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'test.beam3.txt'} has 2 lines but {tmp_path / 'ref'} has 3 lines" in err
    assert json.loads((tmp_path / "score.json").read_text()) == {"bleu": "from the previous, complete run"}


def test_gold_links_outside_the_sentence_are_recorded_in_the_score_file(tmp_path):
    (tmp_path / "src").write_text("a b\nc d e\n")
    (tmp_path / "tgt").write_text("x y\nz w\n")
    (tmp_path / "gold").write_text("1-1 2-2 3-2\n1-1 2p2\n")  # 3-2: the source has 2 words
    (tmp_path / "links").write_text("1-1 2-2\n1-1 2-2\n")
    out = tmp_path / "aer.json"
    assert nmtlib_main(["evaluate", "alignment", "--gold", str(tmp_path / "gold"), "--links", str(tmp_path / "links"),
                        "--src", str(tmp_path / "src"), "--tgt", str(tmp_path / "tgt"), "--out", str(out)]) == 0
    score = json.loads(out.read_text())
    assert score["out_of_bounds"] == [
        f"{tmp_path / 'gold'}:1: link(s) 3-2 outside the sentence (2 source x 2 target words)"]
    # counted as aer.py counts it (|S| = 4 with the out-of-bounds link), not silently dropped
    assert score["sure_links"] == 4 and score["recall"] == pytest.approx(3 / 4)


# == Security ==================================================================================

class _Payload:
    """Unpickling this runs ``touch MARKER``."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {shlex.quote(self.marker)}",))


def test_a_checkpoint_with_a_pickle_payload_is_refused(tiny_corpus, tmp_path, torch_globals, capsys):
    marker = tmp_path / "PICKLE_PAYLOAD_RAN"
    evil = tmp_path / "model.pt"
    torch.save({"model": _Payload(marker), "variant": {}, "step": 1}, evil)
    with pytest.raises(ValueError, match="refusing to load"):
        checkpoint.load(evil)
    assert not marker.exists()
    common = ["--src", str(tiny_corpus / "test.src"), "--src-vocab", str(tiny_corpus / "vocab.src"),
              "--tgt-vocab", str(tiny_corpus / "vocab.tgt"), "--threads", "1"]
    rc = nmtlib_main(["evaluate", "perplexity", "--model", str(evil), "--tgt", str(tiny_corpus / "test.tgt"),
                      "--out", str(tmp_path / "ppl.json"), *common])
    err = capsys.readouterr().err
    assert rc == 2 and f"nmtlib evaluate: error: {evil}: refusing to load" in err and "GLOBAL posix.system" in err
    # translate refuses too, in one line (B6)
    assert _translate(evil, tiny_corpus, tmp_path) != 0
    assert not marker.exists() and not (tmp_path / "ppl.json").exists() and not (tmp_path / "out.txt").exists()


def _translate(model: Path, corpus: Path, tmp_path: Path) -> int | str:
    try:
        return nmtlib_main(["translate", "--model", str(model), "--src", str(corpus / "test.src"), "--no-progress",
                            "--src-vocab", str(corpus / "vocab.src"), "--tgt-vocab", str(corpus / "vocab.tgt"),
                            "--threads", "1", "--out", str(tmp_path / "out")])
    except Exception as err:  # noqa: BLE001 — what the user would see as a traceback
        return f"uncaught {type(err).__name__}: {err}"


def test_translate_refuses_a_pickle_payload_in_one_line_naming_the_file(tiny_corpus, tmp_path, torch_globals,
                                                                        capsys):
    evil = tmp_path / "model.pt"
    torch.save({"model": _Payload(tmp_path / "PICKLE_PAYLOAD_RAN"), "variant": {}}, evil)
    assert _translate(evil, tiny_corpus, tmp_path) == 2 and str(evil) in capsys.readouterr().err


@pytest.mark.skipif(not (SHARED / "data" / "multi30k" / "train.de.gz").is_file(), reason="shared data not available")
def test_a_cache_dir_with_spaces_and_semicolons_reaches_the_shell_quoted(tmp_path):
    files = ["train.de.gz", "train.en.gz", "val.de.gz", "val.en.gz", "test_2016_flickr.de.gz",
             "test_2016_flickr.en.gz"]
    cache = tmp_path / f"cache {HOSTILE}"
    (cache / "multi30k").mkdir(parents=True)
    for name in files:  # a filled cache: verified by sha256, no network needed
        shutil.copyfile(SHARED / "data" / "multi30k" / name, cache / "multi30k" / name)
    config = tiny_config(_corpus("multi30k"))
    config.update(experiment="quoting", cache_dir=str(cache))
    work = tmp_path / f"work {HOSTILE}"
    work.mkdir()
    path = write_yaml(tmp_path / "config.yaml", config)
    targets = [f"results/quoting/corpus/{s}.{side}" for s in ("train", "dev", "test") for side in ("src", "tgt")]
    run = snakemake(work, *targets, "--cores", "1", "-p", "--configfile", str(path))
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    commands = shell_commands(run.stdout + run.stderr)
    download = next(c for c in commands if "download" in c)
    assert download[download.index("--cache") + 1] == str(cache)
    copies = [c for c in commands if c[2:5] == ["nmtlib", "corpus", "copy"]]
    assert sorted(c[6] for c in copies) == sorted(files)
    assert all(c[c.index("--cache") + 1] == str(cache) for c in copies)
    # the commands did what the quoted paths say, and nothing else
    for split, name in (("train", "train"), ("dev", "val"), ("test", "test_2016_flickr")):
        for side, lang in (("src", "de"), ("tgt", "en")):
            copied = (work / "results" / "quoting" / "corpus" / f"{split}.{side}").read_bytes()
            assert copied == gzip.decompress((cache / "multi30k" / f"{name}.{lang}.gz").read_bytes())
    assert not injected_files(tmp_path) and not injected_files(ROOT)


# == Workflow: interruption, rerun, quoting ======================================================

def _wait_for(condition, proc: subprocess.Popen, log: Path, what: str, timeout: float = 300) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        if proc.poll() is not None:
            pytest.fail(f"snakemake ended (code {proc.returncode}) before {what}:\n{log.read_text()[-3000:]}")
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"timed out waiting for {what}")


def _default_sigint() -> None:
    """Ctrl-C's default action in the child. A shell without job control starts a background
    command (`bash .ci/run &`, a CI runner's script) with SIGINT ignored; the workflow would
    inherit that, Python would then never raise KeyboardInterrupt, and the Ctrl-C of step 1 would
    be lost (the whole run finished with exit 0)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_quiet(log: Path, proc: subprocess.Popen, quiet: float = 0.5, timeout: float = 60) -> None:
    """Until snakemake's log has not grown for ``quiet`` seconds: its scheduler is then waiting on
    running jobs, not handling a job's start or end. Snakemake 9.27 loses a signal that arrives
    while it writes a log line (its log handler's ``emit`` catches KeyboardInterrupt and passes),
    and its SIGTERM handler deadlocks if the signal arrives while the scheduler holds its lock (the
    handler takes the same non-reentrant ``threading.Lock``). A user's Ctrl-C or a batch system's
    SIGTERM lands at a random moment; the test must not depend on that race."""
    deadline = time.time() + timeout
    size, since = -1, time.time()
    while time.time() < deadline and proc.poll() is None:
        now = log.stat().st_size
        if now != size:
            size, since = now, time.time()
        elif time.time() - since >= quiet:
            return
        time.sleep(0.05)


def _snapshot(work: Path) -> dict[str, tuple[int, str]]:
    """results/ file -> (mtime in ns, sha256), checkpoints left out (rewritten on resume by design)."""
    out = {}
    for p in sorted((work / "results").rglob("*")):
        if p.is_file() and "checkpoints" not in p.parts:
            out[str(p.relative_to(work))] = (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def _incomplete(work: Path) -> set[str]:
    folder = work / ".snakemake" / "incomplete"
    return {base64.b64decode(p.name).decode() for p in folder.iterdir()} if folder.is_dir() else set()


@pytest.fixture(scope="module")
def interrupted_workflow(tmp_path_factory) -> SimpleNamespace:
    """The tiny experiment run three times: Ctrl-C (SIGINT to the process group) while models
    train, SIGTERM to snakemake alone while translations run, then to the end. Its folder, its
    config file and its external gold files all have a space, `;` and `$(...)` in their paths."""
    from nmtlib.data.synthetic import write_corpus

    base = tmp_path_factory.mktemp("workflow")
    work = base / f"experiment {HOSTILE}"
    gold = base / f"gold {HOSTILE}"
    work.mkdir()
    # the files the synthetic corpus rule also writes (same seed and sizes), given as user paths
    synthetic = tiny_config()["data"]["synthetic"]
    write_corpus(gold, seed=synthetic["seed"], sizes={k: synthetic[k] for k in ("train", "dev", "test")})

    def quoted(c):
        c["data"].update(alignments=str(gold / "test.align"), dictionary=str(gold / "lexicon.tsv"))
        # training long enough (about 100 steps after the first checkpoint) to be interrupted while it runs
        c["train"].update(epochs=12, max_steps=100)

    config = write_yaml(base / f"config {HOSTILE}.yaml", tiny_config(quoted))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(work), "--cores", "2",
           "-p", "--configfile", str(config)]
    ns = SimpleNamespace(base=base, work=work, gold=gold, config=config, cmd=cmd, logs=[])

    def start(name: str, *extra: str) -> tuple[subprocess.Popen, Path]:
        log = base / f"{name}.log"
        ns.logs.append(log)
        with open(log, "w") as fh:
            proc = subprocess.Popen([*cmd, *extra], stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
                                    preexec_fn=_default_sigint)
        return proc, log

    models = work / "results" / "tiny" / "models"
    # 1. Ctrl-C in a terminal: SIGINT to snakemake and its jobs, while a model trains past a checkpoint
    proc, log = start("1-sigint")
    _wait_for(lambda: any(not (p.parent.parent / "model.pt").exists()
                          for p in models.glob("*/seed1/checkpoints/last.pt")), proc, log, "a checkpoint")
    _wait_quiet(log, proc)
    os.killpg(proc.pid, signal.SIGINT)
    ns.rc1 = proc.wait(timeout=300)
    ns.after1, ns.incomplete1 = _snapshot(work), _incomplete(work)
    # Snakemake will not take an interrupted job's files for done: the same command redoes those jobs
    # (rerun-incomplete, from the workflow profile profiles/default)
    ns.plain_rerun = snakemake(work, "-n", "--configfile", str(config), timeout=120)
    # 2. SIGTERM to snakemake alone (kill PID, a batch system stopping the driver job): the same command
    proc, log = start("2-sigterm")
    _wait_for(lambda: any((work / "logs" / "tiny" / "translate").glob("*.log")), proc, log, "a translate job")
    _wait_quiet(log, proc, quiet=0.3)  # a translate job lives 2 s or more (Python and torch start-up)
    proc.send_signal(signal.SIGTERM)
    ns.rc2 = proc.wait(timeout=300)
    ns.log2 = log.read_text()
    ns.after2, ns.incomplete2 = _snapshot(work), _incomplete(work)
    # 3. run again to the end
    proc, log = start("3-finish")
    ns.rc3 = proc.wait(timeout=600)
    ns.log3 = log.read_text()
    ns.after3 = _snapshot(work)
    return ns


def _rules_run(log: str) -> set[str]:
    return {rule for rule, _ in snakemake_jobs(log)}


def test_interrupted_workflow_finishes_the_rest_and_redoes_nothing(interrupted_workflow):
    w = interrupted_workflow
    # 1. Ctrl-C: the run stops; the training jobs it interrupted are marked incomplete
    assert w.rc1 != 0
    assert not [f for f in w.after1 if "/tables/" in f]
    assert any("/models/" in f for f in w.incomplete1), w.incomplete1
    plan = w.plain_rerun.stdout + w.plain_rerun.stderr
    assert w.plain_rerun.returncode == 0 and "IncompleteFilesException" not in plan, plan[-3000:]
    interrupted = {f.split("/")[3] for f in w.incomplete1 if f.startswith("results/tiny/models/")}
    planned = set(trained_variants(plan))
    assert interrupted and interrupted <= planned, (interrupted, plan[-3000:])
    done1 = {f: v for f, v in w.after1.items() if f not in w.incomplete1}
    assert {"results/tiny/data/train.src", "results/tiny/vocab/tgt.txt"} <= set(done1)
    # 2. SIGTERM: running jobs finish and are recorded, no new job starts, nothing is left incomplete
    assert w.rc2 != 0 and "Will exit after finishing currently running jobs" in w.log2
    assert not w.incomplete2
    assert not [f for f in w.after2 if "/tables/" in f]
    # the interrupted training resumed from its checkpoint instead of starting over
    train_logs = (w.work / "logs" / "tiny" / "train_model").glob("*.log")
    assert any("resuming from" in p.read_text() for p in train_logs)
    # 3. the last run completes, and every file finished before an interruption is untouched
    assert w.rc3 == 0, w.log3[-3000:]
    assert (w.work / "results" / "tiny" / "tables" / "summary.csv").exists()
    for before in (done1, w.after2):
        assert {f: w.after3.get(f) for f in before} == before
    assert _rules_run(w.log3) and not _rules_run(w.log3) & {"generate_corpus", "prepare_split", "build_vocab",
                                                            "train_model"}


def test_paths_with_spaces_and_semicolons_reach_the_shell_quoted(interrupted_workflow):
    w = interrupted_workflow
    commands = shell_commands("\n".join(p.read_text() for p in w.logs))
    translate = [c for c in commands if "translate" in c and "--out" in c]  # the decoding jobs
    align = [c for c in commands if "alignment" in c]
    assert translate and align
    assert all(c[c.index("--dict") + 1] == str(w.gold / "lexicon.tsv") for c in translate)
    assert all(c[c.index("--gold") + 1] == str(w.gold / "test.align") for c in align)
    # the gold file given by path is the one the workflow generates: AER ran with every link in bounds
    assert (w.gold / "test.align").read_bytes() == (w.work / "results/tiny/corpus/test.align").read_bytes()
    aer = json.loads((w.work / "results/tiny/scores/global-general-feed/seed1/test.aer.json").read_text())
    assert aer["out_of_bounds"] == [] and 0 <= aer["aer"] <= 1
    assert not injected_files(w.base) and not injected_files(ROOT)


def _dry_run(w, change) -> str:
    config = yaml.safe_load(w.config.read_text())
    change(config)
    path = write_yaml(w.base / "changed.yaml", config)
    run = snakemake(w.work, "-n", "--configfile", str(path), timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout + run.stderr


def test_changing_a_decoding_option_retrains_nothing(interrupted_workflow):
    plan = _dry_run(interrupted_workflow, lambda c: c["decode"].update(beam=4))
    assert re.search(r"^(local)?rule translate:", plan, re.M)  # the new beam is decoded ...
    assert not re.search(r"^(local)?rule train_model:", plan, re.M)  # ... with the models already trained


def test_adding_a_variant_retrains_only_that_variant(interrupted_workflow):
    plan = _dry_run(interrupted_workflow, lambda c: c["variants"].update(
        extra={"embedding_size": 16, "hidden_size": 16, "layers": 1, "attention": "global", "score": "dot"}))
    assert trained_variants(plan) == ["extra"]


def test_reordering_config_keys_reruns_nothing(interrupted_workflow):
    def reorder(c):
        c["data"]["synthetic"] = dict(sorted(c["data"]["synthetic"].items()))

    assert "Nothing to be done" in _dry_run(interrupted_workflow, reorder)


def test_a_failing_rerun_leaves_finished_results_byte_identical(interrupted_workflow):
    w = interrupted_workflow
    before = _snapshot(w.work)
    assert any(f.endswith("tables/summary.csv") for f in before)
    # a second seed whose training cannot write its checkpoints: a file stands where the folder goes
    config = yaml.safe_load(w.config.read_text())
    config["seeds"] = [1, 2]
    config_file = write_yaml(w.base / "two seeds.yaml", config)
    for variant in ("base", "global-general-feed"):
        blocker = w.work / f"results/tiny/models/{variant}/seed2/checkpoints"
        blocker.parent.mkdir(parents=True)
        blocker.write_text("not a folder\n")
    run = snakemake(w.work, "--cores", "1", "--configfile", str(config_file), timeout=300)
    assert run.returncode != 0
    assert "Error in rule train_model" in run.stdout + run.stderr
    assert not (w.work / "results/tiny/models/base/seed2/model.pt").exists()
    # every result of the finished run: same bytes, same mtime
    after = _snapshot(w.work)
    assert {f: after.get(f) for f in before} == before


def test_a_killed_driver_leaves_a_lock_that_unlock_clears(interrupted_workflow):
    """kill -9 of snakemake and its jobs (the node running the driver dies) while it decodes with a
    new beam: the next run refuses the locked folder and says what to do; ``--unlock`` clears the
    lock and the same command (``rerun-incomplete`` from the workflow profile) redoes the killed jobs,
    and trains nothing."""
    w = interrupted_workflow
    config = yaml.safe_load(w.config.read_text())
    config["decode"]["beam"] = 2
    config_file = write_yaml(w.base / "beam two.yaml", config)
    cmd = [*w.cmd[:w.cmd.index("--configfile")], "--configfile", str(config_file)]
    log = w.base / "5-sigkill.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    _wait_for(lambda: re.search(r"^(local)?rule translate:", log.read_text(), re.M), proc, log, "a translate job")
    _wait_quiet(log, proc, quiet=0.3)  # the job has started (a translate job lives 2 s or more)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    before = _snapshot(w.work)
    assert _incomplete(w.work)

    locked = snakemake(w.work, "--cores", "1", "--configfile", str(config_file), timeout=120)
    assert locked.returncode != 0
    message = locked.stdout + locked.stderr
    assert "Directory cannot be locked" in message and "--unlock" in message, message[-2000:]
    assert _snapshot(w.work) == before  # the refused run touched nothing

    assert snakemake(w.work, "--unlock", "--configfile", str(config_file), timeout=120).returncode == 0
    finish = snakemake(w.work, "--cores", "2", "--configfile", str(config_file), timeout=600)
    assert finish.returncode == 0, finish.stderr[-3000:]
    rules = _rules_run(finish.stdout + finish.stderr)
    assert "translate" in rules and "train_model" not in rules, (finish.stdout + finish.stderr)[-3000:]
    assert not _incomplete(w.work)
    assert (w.work / "results/tiny/translations/global-general-feed/seed1/test.beam2.txt").is_file()


def test_a_model_put_into_the_workflows_folder_behind_its_back_is_not_reported(interrupted_workflow):
    """Issue #41: a model copied over the workflow's (trained with other options, here max_steps 3
    instead of 100) was decoded, scored and tabulated as the variant. Snakemake, whose records
    still say the folder's model is its own, re-decodes it; the report step refuses it in one
    line naming the folder and the difference, and nothing is tabulated. The last test of the
    workflow's group: it leaves the folder without the model."""
    w = interrupted_workflow
    folder = w.work / "results/tiny/models/base/seed1"
    foreign = w.base / "foreign"
    trained = subprocess.run([sys.executable, "-m", "nmtlib", "train", "--config", str(w.config), "--variant", "base",
                              "--set", "max_steps=3", "--out", str(foreign), "--no-progress"],
                             capture_output=True, text=True, cwd=w.work, timeout=300)
    assert trained.returncode == 0, trained.stderr[-2000:]
    for name in ("model.pt", "train_log.csv", "env.json"):
        shutil.copyfile(foreign / name, folder / name)
    run = snakemake(w.work, "--cores", "2", "--configfile", str(w.config), timeout=600)
    assert run.returncode != 0
    log = (w.work / "logs/tiny/make_report.log").read_text()
    assert log.strip().splitlines()[-1] == (
        "nmtlib report: error: results/tiny/models/base/seed1: not a model of variant base (train.max_steps 3 in "
        "the model's record, 100 in the variant); the tables would report it as one: remove "
        "results/tiny/models/base/seed1 and run snakemake again to retrain it")
    assert not (w.work / "results/tiny/tables/summary.csv").exists()
    # as it says: with the folder removed, the next run retrains it (and everything after it)
    shutil.rmtree(folder)
    plan = snakemake(w.work, "-n", "--configfile", str(w.config), timeout=120)
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert ("train_model", {"variant": "base", "seed": "1"}) in snakemake_jobs(plan.stdout), plan.stdout[-3000:]
    assert "make_report" in _rules_run(plan.stdout)


def test_a_second_driver_of_a_running_experiment_is_refused_after_another_experiment_ends(tmp_path):
    """W8. Two experiments run at once in one folder, and one of them ends. Snakemake 9.27 then
    removes every driver's lock (``.snakemake/locks/`` goes). Before: a second driver of the
    experiment still running was not refused, and with ``--rerun-incomplete`` it deleted the running
    training's ``train_log.csv`` and ``env.json`` and trained beside it. Now the driver's hold on its
    results folder (nmtlib/locks.py) refuses it in one line that names the first driver, before
    any job, and the running training goes on untouched."""
    work = tmp_path / "work"
    work.mkdir()

    def endless(config: dict) -> None:
        config["experiment"] = "long"
        config["train"].update(epochs=100000, max_steps=10000000, checkpoint_every=50)

    long = write_yaml(tmp_path / "long.yaml", tiny_config(endless))
    log = tmp_path / "long.log"
    with open(log, "w") as fh:
        first = subprocess.Popen([sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(work),
                                  "--cores", "1", "--configfile", str(long)],
                                 stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    models = work / "results/long/models"
    try:
        _wait_for(lambda: list(models.glob("*/seed1/train_log.csv")), first, log, "a training's first epoch")
        [running] = [p.parent for p in models.glob("*/seed1/train_log.csv")]
        other = snakemake(work, "results/short/vocab/src.txt", "--cores", "1", "--configfile", str(TINY),
                          "--config", "experiment=short")
        assert other.returncode == 0, other.stderr[-3000:]
        assert not (work / ".snakemake/locks").exists(), \
            "Snakemake no longer removes the other drivers' locks: its own lock may now suffice (nmtlib/locks.py)"
        env, curve = (running / "env.json").read_bytes(), (running / "train_log.csv").read_bytes()

        second = snakemake(work, "--cores", "1", "--rerun-incomplete", "--configfile", str(long))
        assert second.returncode == 1
        assert second.stderr.strip().splitlines()[-1] == (
            f"results/long: another Snakemake (pid {first.pid}) is running experiment 'long' in this folder; wait "
            "for it to end, or stop it, then run this command again")
        assert not _rules_run(second.stdout + second.stderr)  # no job started
        assert first.poll() is None
        assert (running / "env.json").read_bytes() == env
        assert (running / "train_log.csv").read_bytes().startswith(curve)  # still the first run's, growing
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGTERM)
        first.wait(timeout=300)


# == Settings that do not apply, and what is reported (issue #41, item 4) ======================

@pytest.fixture(scope="module")
def global_model(tiny_corpus, tmp_path_factory) -> Path:
    """A tiny model with global attention (no Flexible Attention), trained as a real process."""
    from conftest import TINY_TRAIN_SPEC, train_tiny_model

    return train_tiny_model(tiny_corpus, tmp_path_factory.mktemp("global"), TINY_TRAIN_SPEC)


def nmtlib_run(*args: str | Path, stdin: bytes | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """``nmtlib`` as a user runs it: a real process, bytes in, text out."""
    run = subprocess.run([sys.executable, "-m", "nmtlib", *map(str, args)], input=stdin, capture_output=True,
                         cwd=cwd, timeout=300)
    return subprocess.CompletedProcess(run.args, run.returncode, run.stdout.decode("utf-8", "replace"),
                                       run.stderr.decode("utf-8", "replace"))


def test_tau_on_a_model_without_flexible_attention_is_refused_as_the_config_refuses_it(global_model, tiny_corpus,
                                                                                      tmp_path):
    """Before: the banner said τ 0.5 and the output was the τ = ∞ output, exit 0."""
    run = nmtlib_run("translate", "--model", global_model, "--tokenized", "--tau", "0.5", "--threads", "1",
                     stdin=b"a b c\n")
    assert run.returncode == 2 and run.stdout == "" and len(run.stderr.splitlines()) == 1, run.stderr
    config = write_yaml(tmp_path / "config.yaml", tiny_config(
        lambda c: c["variants"]["global-general-feed"].update(decode={"taus": [0.5]})))
    dry = snakemake(tmp_path / "work", "-n", "--configfile", str(config))
    reason = ("decode.taus (Flexible Attention thresholds τ to decode with, besides τ = ∞")
    assert run.stderr.startswith(f"nmtlib translate: error: τ 0.5 does not apply to {global_model}: {reason}")
    assert "belongs to attention 'flexible', not 'global'" in run.stderr
    # the same check, word for word, as the config's
    assert dry.returncode != 0 and f"variants.global-general-feed.{reason}" in dry.stderr
    assert run.stderr.split(": ", 3)[-1].strip() in dry.stderr


def test_greedy_with_another_beam_is_refused_and_greedy_reports_beam_1(global_model, tiny_corpus, tmp_path):
    """Before: ``--greedy --beam 7`` decoded greedily while the banner, the summary and the saved
    settings said beam 7."""
    common = ["translate", "--model", global_model, "--src", tiny_corpus / "test.src", "--threads", "1",
              "--no-progress"]
    both = nmtlib_run(*common, "--greedy", "--beam", "7", "--out", tmp_path / "both")
    assert both.returncode == 2 and both.stderr == ("nmtlib translate: error: --greedy decodes with beam 1, but beam 7 "
                                                    "comes from --beam: give one of them\n")
    assert not list(tmp_path.glob("both*"))
    greedy = nmtlib_run(*common, "--greedy", "--out", tmp_path / "greedy")
    beam1 = nmtlib_run(*common, "--beam", "1", "--out", tmp_path / "beam1")
    assert greedy.returncode == beam1.returncode == 0, greedy.stderr + beam1.stderr
    assert "from flags: beam 1" in greedy.stderr and json.loads(greedy.stdout)["beam"] == 1
    assert (tmp_path / "greedy.txt").read_text() == (tmp_path / "beam1.txt").read_text()


def test_blank_input_lines_give_empty_output_lines(global_model, tiny_corpus):
    """Before: each blank line got a sentence the model made up (its output for ``<eos>`` alone)."""
    sentence = read_first_line(tiny_corpus / "test.src")
    common = ["translate", "--model", global_model, "--tokenized", "--threads", "1", "--no-progress"]
    alone = nmtlib_run(*common, stdin=f"{sentence}\n".encode())
    mixed = nmtlib_run(*common, stdin=f"\n   \n{sentence}\n\n".encode())
    assert alone.returncode == mixed.returncode == 0, alone.stderr + mixed.stderr
    assert alone.stdout.strip() != ""
    assert mixed.stdout == f"\n\n{alone.stdout}\n"


def read_first_line(path: Path) -> str:
    return path.read_text(encoding="utf-8").split("\n", 1)[0]


# == One rule for every output (issue #41, item 1; nmtlib/atomic.py) ===========================

@pytest.fixture(scope="module")
def translated(global_model, tiny_corpus, tmp_path_factory) -> Path:
    """The prefix of a translation of the tiny test set (PREFIX.txt, .unk.txt, .jsonl)."""
    prefix = tmp_path_factory.mktemp("translated") / "test"
    run = nmtlib_run("translate", "--model", global_model, "--src", tiny_corpus / "test.src", "--out", prefix,
                     "--threads", "1", "--no-progress")
    assert run.returncode == 0, run.stderr
    return prefix


def _commands(c: Path, model: Path, hyp: Path, out: Path) -> dict[str, list]:
    """Each command that writes files, with its inputs and ``out`` for its outputs' folder."""
    text = ["--src", c / "test.src", "--tgt", c / "test.tgt", "--threads", "1"]
    return {
        "translate": ["translate", "--model", model, "--src", c / "test.src", "--out", out / "t", "--threads", "1",
                      "--no-progress"],
        "prepare": ["prepare", "--src", c / "test.src", "--tgt", c / "test.tgt", "--src-out", out / "p.src",
                    "--tgt-out", out / "p.tgt", "--src-lang", "en", "--tgt-lang", "en", "--src-tokenizer", "none",
                    "--tgt-tokenizer", "none", "--stats-out", out / "p.json"],
        "vocab": ["vocab", "--src", c / "train.src", "--out", out / "v.txt"],
        "evaluate translation": ["evaluate", "translation", "--hyp", hyp, "--ref", c / "test.tgt", "--src",
                                 c / "test.src", "--out", out / "e.json"],
        "evaluate perplexity": ["evaluate", "perplexity", "--model", model, *text, "--out", out / "ppl.json"],
        "align": ["align", "--model", model, *text, "--out", out / "a.npz", "--links-out", out / "a.links",
                  "--predicted-links-out", out / "a.pred"],
    }


#: for each command, an output flag and the input flag it is pointed at (the issue's four cases first)
SAME_PATH = [("translate", "--out", "--src"), ("prepare", "--src-out", "--src"), ("vocab", "--out", "--src"),
             ("evaluate translation", "--out", "--ref"), ("prepare", "--stats-out", "--tgt"),
             ("evaluate perplexity", "--out", "--tgt"), ("align", "--links-out", "--src"),
             ("align", "--predicted-links-out", "--tgt")]


@pytest.mark.parametrize("command, output, given_input", SAME_PATH)
@pytest.mark.parametrize("how", ["same-path", "symlink", "hard-link"])
def test_no_command_writes_a_file_it_reads(global_model, tiny_corpus, translated, tmp_path, command, output,
                                           given_input, how):
    """Before: each was accepted with exit 0, and the input replaced by the output."""
    corpus = tmp_path / "corpus"
    shutil.copytree(tiny_corpus, corpus)
    args = _commands(corpus, global_model, translated, tmp_path / "out")[command]
    victim = Path(args[args.index(given_input) + 1])
    before = victim.read_bytes()
    # translate --out is a prefix: PREFIX.txt is the file it writes first
    target = tmp_path / "out" / ("t.txt" if command == "translate" else "target")
    target.parent.mkdir()
    if how == "same-path":
        target = victim
    elif how == "symlink":
        target.symlink_to(victim)
    else:
        os.link(victim, target)
    args[args.index(output) + 1] = target.with_suffix("") if command == "translate" else target
    if command == "translate" and how == "same-path":  # --src PREFIX.txt --out PREFIX
        args[args.index("--src") + 1] = victim = victim.rename(victim.with_suffix(".txt"))
        args[args.index("--out") + 1] = victim.with_suffix("")
    run = nmtlib_run(*args)
    assert run.returncode == 2, run.stderr
    # one line, after translate's banner
    assert run.stderr.splitlines()[-1].startswith(f"nmtlib {command.split()[0]}: error: ") and \
        "Traceback" not in run.stderr and "refusing to write the file this command reads" in run.stderr
    assert victim.read_bytes() == before
    assert not [p for p in tmp_path.rglob(".*.tmp")]


@pytest.mark.parametrize("together", [False, True])
def test_a_replaced_outputs_old_file_is_no_output_any_more(tmp_path, together):
    """A command's claim on an output names the file it replaces by (device, inode); once the new
    file has taken the name, the old one is no output of the command. Before, the claim stayed: a
    later input with that inode was refused as the command's own output, and the file system reuses
    freed inodes (``nmtlib publish`` refused to read back its index's page). A hard link keeps the
    old inode alive here, in place of a reuse."""
    from nmtlib.atomic import atomic_write, note_input, one_command, outputs_together

    output, kept = tmp_path / "table.csv", tmp_path / "old-table.csv"
    output.write_text("old\n")
    os.link(output, kept)
    with one_command():
        with outputs_together() if together else contextlib.nullcontext():
            with atomic_write(output) as f:
                f.write("new\n")
        note_input(kept)  # the replaced file, read as an input: allowed
        with pytest.raises(OSError, match="refusing to write the file this command reads"):
            with atomic_write(kept) as f:  # and now an input: refused as an output
                f.write("x\n")
    assert (output.read_text(), kept.read_text()) == ("new\n", "old\n")


@pytest.fixture
def small_disk(tmp_path):
    """A real tmpfs, mounted read-only or nearly full (``mount(mode, free_bytes)``), unmounted after."""
    mounted: list[Path] = []

    def mount(mode: str, free: int = 0) -> Path:
        mnt = tmp_path / f"disk-{mode}"
        mnt.mkdir()
        size = 1 << 20
        opts = f"size={size}" + (",ro" if mode == "read-only" else "")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(mnt)], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs (needs root): {done.stderr.strip()}")
        mounted.append(mnt)
        if mode == "full":
            (mnt / "filler").write_bytes(b"\0" * (size - free))
        return mnt

    yield mount
    for mnt in mounted:
        if subprocess.run(["umount", str(mnt)]).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)])


@pytest.mark.parametrize("command", ["translate", "prepare", "vocab", "evaluate translation", "evaluate perplexity",
                                     "align"])
@pytest.mark.parametrize("mode, reason", [("read-only", "Read-only file system"),
                                          ("full", "No space left on device")])
def test_a_write_error_is_one_line_naming_the_file_and_leaves_nothing(global_model, tiny_corpus, translated,
                                                                      small_disk, command, mode, reason):
    """Before: a 7-frame OSError traceback from translate, prepare, vocab, evaluate and align."""
    # full: a command of several files has room for its first (4 KiB), not for all of them
    mnt = small_disk(mode, free=4096 if command in ("translate", "prepare", "align") else 0)
    before = sorted(p.name for p in mnt.iterdir())
    run = nmtlib_run(*_commands(tiny_corpus, global_model, translated, mnt)[command])
    # one line (after translate's banner), no traceback
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert re.fullmatch(rf"nmtlib {command.split()[0]}: error: cannot write {re.escape(str(mnt))}/\S+: {reason}",
                        run.stderr.strip().splitlines()[-1]), run.stderr
    assert sorted(p.name for p in mnt.iterdir()) == before  # no output, no temporary file, all or none


# == One reader for every text input (issue #41, item 3; nmtlib/files.py) =====================

def _reader_cases(c: Path, model: Path, hyp: Path, small: Path, out: Path) -> dict[str, tuple[list, str | None]]:
    """Each text input of each command: the command's arguments and the flag of the input (None:
    standard input). ``small``: a hand-made sentence pair with gold links and a dictionary."""
    text = ["--src", c / "test.src", "--tgt", c / "test.tgt", "--threads", "1"]
    translate = ["translate", "--model", model, "--threads", "1", "--no-progress", "--tokenized"]
    return {
        "prepare corpus": (["prepare", "--src", c / "test.src", "--tgt", c / "test.tgt", "--src-out", out / "p.src",
                            "--tgt-out", out / "p.tgt", "--src-lang", "en", "--tgt-lang", "en", "--src-tokenizer",
                            "none", "--tgt-tokenizer", "none"], "--src"),
        "vocab corpus": (["vocab", "--src", c / "train.src", "--out", out / "v.txt"], "--src"),
        "translate --src": ([*translate, "--src", c / "test.src"], "--src"),
        "translate stdin": ([*translate], None),
        # (translate checks a vocabulary file's sha256 against the model's record: bytes, not words)
        "evaluate vocabulary": (["evaluate", "translation", "--hyp", hyp, "--ref", c / "test.tgt", "--src",
                                 c / "test.src", "--src-vocab", c / "vocab.src", "--tgt-vocab", c / "vocab.tgt",
                                 "--out", "-"], "--src-vocab"),
        "translate dictionary": ([*translate, "--src", c / "test.src", "--dict", small / "dict"], "--dict"),
        "score hypothesis": (["score", "bleu", "--tokenized", "--hyp", f"{hyp}.txt", "--ref", c / "test.tgt"],
                             "--hyp"),
        "evaluate reference": (["evaluate", "translation", "--hyp", hyp, "--ref", c / "test.tgt", "--src",
                                c / "test.src", "--out", "-"], "--ref"),
        "evaluate gold alignment": (["evaluate", "alignment", "--gold", small / "gold", "--links", small / "links",
                                     "--src", small / "src", "--tgt", small / "tgt", "--out", "-"], "--gold"),
        "evaluate predicted alignment": (["evaluate", "alignment", "--gold", small / "gold", "--links", small / "links",
                                          "--src", small / "src", "--tgt", small / "tgt", "--out", "-"], "--links"),
        "align reference": (["align", "--model", model, *text, "--out", out / "a.npz", "--links-out", out / "a.links"],
                            "--tgt"),
    }


@pytest.mark.parametrize("case", ["prepare corpus", "vocab corpus", "translate --src", "translate stdin",
                                  "evaluate vocabulary", "translate dictionary", "score hypothesis",
                                  "evaluate reference", "evaluate gold alignment", "evaluate predicted alignment",
                                  "align reference"])
def test_every_text_input_is_read_by_the_one_reader(global_model, tiny_corpus, translated, tmp_path, case):
    """A BOM and CRLF line ends change nothing; invalid UTF-8 and a NUL byte are one line naming
    the file and the line, whichever command reads the file. Before: a BOM became part of
    translate's first token, invalid UTF-8 on standard input became U+FFFD (exit 0) while --src
    failed naming neither file nor line, a NUL passed prepare, vocab and translate, and a binary
    --dict failed naming nothing."""
    small = tmp_path / "small"
    small.mkdir()
    for name, content in (("src", "a b\nc\n"), ("tgt", "x y\nz\n"), ("gold", "1-1 2p2\n1-1\n"),
                          ("links", "1-1 2-2\n1-1\n"), ("dict", "3 three\n4 four\n")):
        (small / name).write_text(content)
    args, flag = _reader_cases(tiny_corpus, global_model, translated, small, tmp_path / "out")[case]
    clean = Path(args[args.index(flag) + 1]) if flag else tiny_corpus / "test.src"
    data = clean.read_bytes()

    def run_with(content: bytes, name: str) -> subprocess.CompletedProcess:
        given = list(args)
        path = tmp_path / name
        path.write_bytes(content)
        if flag:
            given[given.index(flag) + 1] = path
        result = nmtlib_run(*given, stdin=None if flag else content)
        outputs = sorted((p.name, p.read_bytes()) for p in (tmp_path / "out").glob("*")) if \
            (tmp_path / "out").exists() else []
        shutil.rmtree(tmp_path / "out", ignore_errors=True)
        result.files = outputs  # type: ignore[attr-defined]
        return result

    where = (lambda name: str(tmp_path / name)) if flag else (lambda name: "<stdin>")
    reference = run_with(data, "clean")
    assert reference.returncode == 0, reference.stderr
    dirty = run_with(b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n"), "bom-crlf")
    assert dirty.returncode == 0 and (dirty.stdout, dirty.files) == (reference.stdout, reference.files), dirty.stderr
    lines = data.split(b"\n")
    for name, broken, message in (("utf8", b"\xff\xfe" + lines[1], f"{where('utf8')}:2: invalid UTF-8 at byte 0 of "
                                                                   f"the line (invalid start byte)"),
                                  ("nul", lines[1] + b"\0x", f"{where('nul')}:2: a NUL byte: not a text file")):
        bad = run_with(b"\n".join([lines[0], broken, *lines[2:]]), name)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
        assert message in bad.stderr.strip().splitlines()[-1], bad.stderr
        assert bad.files == []


def test_words_that_spell_a_special_symbol_are_unknown_words(tiny_corpus, tmp_path):
    """Before: a literal <pad> in a target encoded to the padding id (dropped from the loss) and a
    mid-sentence <eos> to the end id."""
    from nmtlib.data.batching import ParallelData
    from nmtlib.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Vocabulary

    (tmp_path / "s").write_text("a <pad> b\n")
    (tmp_path / "t").write_text("<bos> x <eos> y <unk> <pad>\n")
    vocab = Vocabulary(["<pad>", "<unk>", "<bos>", "<eos>", "a", "b", "x", "y"])
    data = ParallelData.load(tmp_path / "s", tmp_path / "t", vocab, vocab)
    assert data.src == [[4, UNK_ID, 5]] and data.tgt == [[UNK_ID, 6, UNK_ID, 7, UNK_ID, UNK_ID]]
    assert not {PAD_ID, BOS_ID, EOS_ID} & {*data.src[0], *data.tgt[0]}
    # and `nmtlib vocab` counts none of them as a word; a file of nothing else is refused
    (tmp_path / "specials").write_text("<pad> <eos>\n<unk>\n")
    (tmp_path / "empty").write_bytes(b"")
    for name in ("specials", "empty"):
        run = nmtlib_run("vocab", "--src", tmp_path / name, "--out", tmp_path / f"{name}.vocab")
        assert run.returncode == 2 and run.stderr == (f"nmtlib vocab: error: {tmp_path / name}: no word to build a "
                                                      f"vocabulary of (an empty file, or only special symbols); give "
                                                      f"the tokenized training text\n")
        assert not (tmp_path / f"{name}.vocab").exists()


# == A model folder belongs to one run (issue #41, item 2) =====================================

def test_a_second_training_run_on_one_folder_is_refused_while_the_first_runs(tiny_corpus, tmp_path):
    """Before: both exited 0; the second moved the first's live last.pt aside and the files mixed."""
    import fcntl

    from conftest import TINY_TRAIN_SPEC, tiny_train_cmd

    spec = json.loads(json.dumps(TINY_TRAIN_SPEC))
    spec["options"]["train"].update(max_steps=400, epochs=40)  # long enough to be caught running
    out = tmp_path / "model"
    first = subprocess.Popen(tiny_train_cmd(tiny_corpus, out, spec), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        deadline = time.monotonic() + 120
        while True:  # until the first run holds the folder (a shared lock cannot be had beside it)
            assert first.poll() is None and time.monotonic() < deadline, "the first run ended before it was seen"
            if out.is_dir():
                fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    break
                finally:
                    os.close(fd)
            time.sleep(0.1)
        second = subprocess.run(tiny_train_cmd(tiny_corpus, out, spec), capture_output=True, text=True, timeout=300)
        assert second.returncode == 2 and second.stderr.strip().splitlines() == [
            f"nmtlib train: error: {out}: another training run is writing this model folder; wait for it to end, or "
            f"give this run another --out"]
        stdout, stderr = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, stderr[-2000:]
    # the first ran undisturbed to its end: never resumed, its model from its own run
    assert "resuming" not in stderr and sorted(p.name for p in out.iterdir()) == ["env.json", "model.pt",
                                                                                  "train_log.csv"]
    assert checkpoint.load(out / "model.pt")["step"] <= json.loads(stdout.splitlines()[-1])["step"]


def test_a_quoted_number_in_set_gets_the_quoting_hint_not_the_yaml_one(capsys):
    """Before: ``--set lr="0.1"`` (a JSON string) got the YAML 1.1 exponent hint, which fits neither."""
    spec = json.dumps({"name": "x", "options": {}})
    files = [x for flag in ("--train-src", "--train-tgt", "--dev-src", "--dev-tgt", "--src-vocab", "--tgt-vocab")
             for x in (flag, "unused")]
    assert nmtlib_main(["train", "--variant-json", spec, *files, "--out", "unused", "--set", 'lr="0.1"']) == 2
    assert capsys.readouterr().err == ('nmtlib train: error: --set lr="0.1": expected float, got \'0.1\' (str); '
                                       "'0.1' is quoted, so it is a string: write 0.1 without quotes\n")
