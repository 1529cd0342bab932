"""One command-line style (issue #29, item 5): every command has a description and every option
says what it is, with no reStructuredText markup showing in ``--help``."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

from nmtlib.cli import build_parser, plain_text


def _commands(parser: argparse.ArgumentParser, path: str = "nmtlib"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{path} {name}")


def test_every_command_has_a_description_and_every_option_a_help():
    missing = []
    for path, parser in _commands(build_parser()):
        if path.count(" ") == 1 and not parser.description:
            missing.append(f"{path}: no description")
        for action in parser._actions:
            if action.option_strings and action.dest != "help" and not action.help:
                missing.append(f"{path} {action.option_strings[0]}: no help")
    assert missing == []


def test_help_shows_no_markup():
    for path, parser in _commands(build_parser()):
        text = parser.format_help()
        assert "``" not in text and not re.search(r":\w+:`", text), path


def test_help_shows_no_doubled_percent_sign():
    """argparse %-formats an option's help (so a literal % is written %%) but not a description: a
    %% there shows as it is written."""
    for path, parser in _commands(build_parser()):
        assert "%%" not in parser.format_help(), path


def test_plain_text_drops_markup():
    assert plain_text("``nmtlib x``: see :func:`~a.b.c`\n  and ``y``.") == "nmtlib x: see a.b.c and y."


def test_one_name_per_concept():
    """Inputs are --src/--tgt/--model (files) and the main output is --out; a command's other outputs
    are --<what>-out. No command spells these another way (--input, --output, --out-dir, --out-prefix,
    --attention-out, --tables)."""
    seen: dict[str, list[str]] = {}
    for path, parser in _commands(build_parser()):
        for action in parser._actions:
            for flag in action.option_strings:
                seen.setdefault(flag, []).append(path)
    outputs = sorted(f for f in seen if "out" in f.split("-")[2:] or f.startswith("--out"))
    assert all(f == "--out" or (f.endswith("-out") and not f.startswith("--out")) for f in outputs), outputs
    assert {"--input", "--output", "--out-dir", "--out-prefix", "--tables", "--figures", "--prefix"} & set(seen) == set()
    # every command that writes one main file or folder names it --out
    for command in ("vocab", "train", "translate", "align", "report", "publish", "corpus"):
        assert any(p.startswith(f"nmtlib {command}") for p in seen["--out"]), command


def test_vocab_builds_either_side_from_src_or_tgt(tmp_path):
    text = tmp_path / "train.tgt"
    text.write_text("b a\nc b\nb\n", encoding="utf-8")
    out = tmp_path / "vocab.tgt"
    run = subprocess.run([sys.executable, "-m", "nmtlib", "vocab", "--tgt", str(text), "--out", str(out), "--size", "2"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    # the special symbols, then the 2 most frequent words: b (3 times), then a and c (once each; a first, by name)
    assert out.read_text(encoding="utf-8").splitlines()[:6] == ["<pad>", "<unk>", "<bos>", "<eos>", "b", "a"]
    both = subprocess.run([sys.executable, "-m", "nmtlib", "vocab", "--src", str(text), "--tgt", str(text), "--out",
                           str(out)], capture_output=True, text=True, timeout=60)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
