"""One command-line style (issue #29, item 5): every command has a description and every option
says what it is, with no reStructuredText markup showing in ``--help``."""

from __future__ import annotations

import argparse
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
    for command in ("train", "vocab", "evaluate", "report", "publish", "align"):
        out = subprocess.run([sys.executable, "-m", "nmtlib", command, "--help"], capture_output=True, text=True)
        assert out.returncode == 0
        assert "``" not in out.stdout and ":func:" not in out.stdout, command


def test_plain_text_drops_markup():
    assert plain_text("``nmtlib x``: see :func:`~a.b.c`\n  and ``y``.") == "nmtlib x: see a.b.c and y."
