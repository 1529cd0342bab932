"""Long test inputs (issue #27, item 4): a source line over ``max_src_len`` tokens is translated
from its first ``max_src_len`` tokens, with a warning on stderr and ``"truncated_from"`` in its
``.jsonl`` record; the output keeps one line per input line (nmtlib/decode/translate.py).

A real model is trained for a few steps on the tiny synthetic corpus, and ``nmtlib translate`` runs
as a real process on a real 100,000-token line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import restored_torch_switches, train_tiny_model

#: trained long enough (100 steps, seconds) that translations are words, not just <eos>. Decoded
#: without a limit (``max_src_len=None``), a 100,000-token line made of the training words does not
#: end before the length limit: the search would run up to 200,010 steps keeping 1.2 MB of attention
#: each (3 × 100,000 floats); by hand, it failed to allocate within a 4 GB address space
SPEC = {"name": "g", "options": {"embedding_size": 24, "hidden_size": 24, "layers": 1, "attention": "global",
                                 "score": "general",
                                 "train": {"optimizer": "adam", "lr": 0.01, "batch_size": 32, "epochs": 8,
                                           "max_steps": 100}}}
#: the documented default of ``DecodeOptions.max_src_len`` (nmtlib.config.DecodeConfig.max_src_len)
DEFAULT_LIMIT = 250
LONG = 100_000


@pytest.fixture(scope="module")
def model(tiny_corpus, tmp_path_factory) -> Path:
    return train_tiny_model(tiny_corpus, tmp_path_factory.mktemp("long-inputs-model"), SPEC)


def translate(model: Path, corpus: Path, src: Path, prefix: Path, *extra: str) -> tuple[int, str, int]:
    """``nmtlib translate`` as a process: exit code, stderr, and its peak resident memory in bytes."""
    cmd = [sys.executable, "-m", "nmtlib", "translate", "--model", str(model), "--src", str(src),
           "--src-vocab", str(corpus / "vocab.src"), "--tgt-vocab", str(corpus / "vocab.tgt"),
           "--out", str(prefix), "--beam", "3", "--threads", "1", "--no-progress", *extra]
    with open(prefix.parent / f"{prefix.name}.stderr", "w+") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return proc.returncode, err.read(), usage.ru_maxrss * 1024  # Linux: kilobytes


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def test_a_100000_token_line_is_translated_from_its_first_tokens_with_a_warning(model, tiny_corpus, tmp_path):
    train = lines(tiny_corpus / "train.src")
    words = " ".join(train).split() + ["never-seen-word"]
    long_line = " ".join(words[i % len(words)] for i in range(LONG))
    test = [train[0], long_line, "", train[1]]
    src = tmp_path / "test.src"
    src.write_text("".join(f"{line}\n" for line in test), encoding="utf-8")
    code, err, peak = translate(model, tiny_corpus, src, tmp_path / "out")
    assert code == 0, err[-3000:]
    # one warning, naming the file and line; a bounded search (an unbounded one keeps up to 1 TB of attention)
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert warnings == [f"nmtlib translate: warning: {src}:2: {LONG} tokens, translated from its first "
                        f"{DEFAULT_LIMIT} (decode max_src_len) (see \"truncated_from\" in {tmp_path / 'out'}.jsonl)"]
    assert peak < 1024**3, f"nmtlib translate peaked at {peak / 1024**2:.0f} MB"
    # one output line per input line, and a record that says what was cut
    for suffix in (".txt", ".unk.txt", ".jsonl"):
        assert len(lines(tmp_path / f"out{suffix}")) == len(test), suffix
    records = [json.loads(line) for line in lines(tmp_path / "out.jsonl")]
    assert [r.get("truncated_from") for r in records] == [None, LONG, None, None]
    assert [r["id"] for r in records] == [0, 1, 2, 3]
    # what was decoded is the line's first 250 tokens: the same translation as that prefix alone
    prefix_src = tmp_path / "prefix.src"
    prefix_src.write_text(" ".join(long_line.split()[:DEFAULT_LIMIT]) + "\n", encoding="utf-8")
    code, err, _ = translate(model, tiny_corpus, prefix_src, tmp_path / "prefix")
    assert code == 0 and "warning" not in err, err[-3000:]
    assert lines(tmp_path / "prefix.txt") == [lines(tmp_path / "out.txt")[1]]
    assert len(lines(tmp_path / "out.txt")[1].split()) > 10  # a real translation, not an empty line
    assert lines(tmp_path / "prefix.unk.txt") == [lines(tmp_path / "out.unk.txt")[1]]
    # the other lines are translated as if the long one were not there
    short_src = tmp_path / "short.src"
    short_src.write_text(f"{train[0]}\n\n{train[1]}\n", encoding="utf-8")
    code, err, _ = translate(model, tiny_corpus, short_src, tmp_path / "short")
    assert code == 0, err[-3000:]
    assert [lines(tmp_path / "out.txt")[i] for i in (0, 2, 3)] == lines(tmp_path / "short.txt")


def test_the_limit_is_an_option_and_every_cut_line_is_recorded(model, tiny_corpus, tmp_path, capsys):
    from nmtlib.decode.translate import DecodeOptions, translate_file

    src = tiny_corpus / "test.src"
    lengths = [len(line.split()) for line in lines(src)]
    limit = sorted(lengths)[len(lengths) // 4]  # about three quarters of the lines are longer
    longer = [i for i, n in enumerate(lengths) if n > limit]
    assert 10 < len(longer) < len(lengths)
    with torch.no_grad(), restored_torch_switches():
        summary = translate_file([model], src, tiny_corpus / "vocab.src", tiny_corpus / "vocab.tgt", tmp_path / "cut",
                                 DecodeOptions(beam=2, batch_size=8, max_src_len=limit), device=torch.device("cpu"),
                                 progress=False)
    records = [json.loads(line) for line in lines(tmp_path / "cut.jsonl")]
    assert len(records) == len(lengths) and summary["truncated"] == len(longer)
    assert [r.get("truncated_from") for r in records] == [n if n > limit else None for n in lengths]
    # the first ten cut lines are named one by one, then how many more there were
    warnings = capsys.readouterr().err.splitlines()
    assert [w.split(": ")[2] for w in warnings[:10]] == [f"{src}:{i + 1}" for i in longer[:10]]
    assert warnings[10:] == [f"nmtlib translate: warning: {src}: {len(longer) - 10} more line(s) over {limit} "
                             f"tokens truncated the same way (see \"truncated_from\" in {tmp_path / 'cut'}.jsonl)"]


def test_no_limit_cuts_nothing_and_a_limit_below_one_is_refused(model, tiny_corpus, tmp_path, capsys):
    from nmtlib.decode.translate import DecodeOptions, translate_file

    src = tiny_corpus / "test.src"
    with torch.no_grad(), restored_torch_switches():
        summary = translate_file([model], src, tiny_corpus / "vocab.src", tiny_corpus / "vocab.tgt", tmp_path / "all",
                                 DecodeOptions(beam=2, max_src_len=None), device=torch.device("cpu"), progress=False)
        assert summary["truncated"] == 0 and "truncated_from" not in (tmp_path / "all.jsonl").read_text()
        with pytest.raises(ValueError, match="^decode max_src_len must be at least 1, got 0$"):
            translate_file([model], src, tiny_corpus / "vocab.src", tiny_corpus / "vocab.tgt", tmp_path / "zero",
                           DecodeOptions(max_src_len=0), device=torch.device("cpu"), progress=False)
    assert not list(tmp_path.glob("zero*")) and "warning" not in capsys.readouterr().err


#: the same model scoring by location over 6 source positions at most (Luong Eq. 9's L_max)
LOCATION = {"name": "loc", "options": {**SPEC["options"], "score": "location", "max_positions": 6,
                                       "train": {**SPEC["options"]["train"], "max_steps": 20}}}
PAST_L_MAX = "{prog}: warning: {where}:2: 9 tokens, but the location score attends to the first 6 (max_positions): " \
             "the last 3 get no attention"


@pytest.fixture(scope="module")
def location_model(tiny_corpus, tmp_path_factory) -> Path:
    return train_tiny_model(tiny_corpus, tmp_path_factory.mktemp("location-model"), LOCATION)


def _nmtlib(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nmtlib", *args], input=stdin, capture_output=True, text=True,
                          timeout=300)


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if "warning" in line]


def test_words_past_the_location_scores_positions_are_warned_of_wherever_a_model_reads_a_source(
        location_model, model, tiny_corpus, tmp_path):
    """Line 2 has 9 tokens; the location score has weights for positions 1-6 only, so its last 3
    words get none (docs/reliability.md, L3). Translation (a file, and text on standard input),
    alignment and perplexity each say so, naming the line; a search cut at 6 tokens, and a model
    that scores by content, have nothing to say."""
    words = " ".join(lines(tiny_corpus / "train.src")).split()
    src, tgt = tmp_path / "test.src", tmp_path / "test.tgt"
    src.write_text(f"{' '.join(words[:3])}\n{' '.join(words[:9])}\n{' '.join(words[:2])}\n", encoding="utf-8")
    tgt.write_text("".join(f"{line}\n" for line in lines(tiny_corpus / "train.tgt")[:3]), encoding="utf-8")
    code, err, _ = translate(location_model, tiny_corpus, src, tmp_path / "out")
    assert code == 0 and _warnings(err) == [PAST_L_MAX.format(prog="nmtlib translate", where=src)], err[-2000:]
    code, err, _ = translate(location_model, tiny_corpus, src, tmp_path / "cut", "--max-src-len", "6")
    assert code == 0 and not any("max_positions" in w for w in _warnings(err)), err[-2000:]
    code, err, _ = translate(model, tiny_corpus, src, tmp_path / "global")
    assert code == 0 and _warnings(err) == [], err[-2000:]
    text = _nmtlib("translate", "--model", str(location_model), "--tokenized", "--threads", "1", "--no-progress",
                   stdin=src.read_text(encoding="utf-8"))
    assert text.returncode == 0 and len(text.stdout.splitlines()) == 3, text.stderr[-2000:]
    assert _warnings(text.stderr) == [PAST_L_MAX.format(prog="nmtlib translate", where="<stdin>")]
    run = _nmtlib("align", "--model", str(location_model), "--src", str(src), "--tgt", str(tgt), "--threads", "1",
                  "--out", str(tmp_path / "a.npz"), "--links-out", str(tmp_path / "a.links"))
    assert run.returncode == 0 and _warnings(run.stderr) == [PAST_L_MAX.format(prog="nmtlib align", where=src)]
    run = _nmtlib("evaluate", "perplexity", "--model", str(location_model), "--src", str(src), "--tgt", str(tgt),
                  "--threads", "1", "--out", str(tmp_path / "ppl.json"))
    assert run.returncode == 0 and _warnings(run.stderr) == [PAST_L_MAX.format(prog="nmtlib evaluate perplexity", where=src)]


def test_the_location_warning_names_ten_lines_then_counts_the_rest(capsys):
    from nmtlib.cli import warn_past_location

    class Location(torch.nn.Module):  # what the warning looks for: a module with L_max (LocationScore's)
        max_positions = 4

    ensemble = [torch.nn.Sequential(Location()), torch.nn.Identity()]  # the smallest L_max of an ensemble's
    warn_past_location("nmtlib translate", ensemble, [5] * 12 + [4, 2], "f.src", first_line=101)
    err = capsys.readouterr().err.splitlines()
    assert [w.split(": ")[2] for w in err[:10]] == [f"f.src:{k}" for k in range(101, 111)]
    assert err[10:] == ["nmtlib translate: warning: f.src: 2 more line(s) over 4 tokens, their last words "
                        "unattended the same way"]
    warn_past_location("nmtlib translate", [torch.nn.Identity()], [500], "f.src")
    assert capsys.readouterr().err == ""
