"""config/README.md, the reference of every config key, against the options' one declaration
(:mod:`nmtlib.config.variant`): each option of ``train``, ``decode`` and a variant has its row,
and a row names the closed set of values its option declares, in the declared order. A value
added to a declaration, or an attention mechanism added to ``nmtlib/registry.py``
(docs/extending.md), fails here until the reference names it."""

from __future__ import annotations

import dataclasses
import re

import pytest

from conftest import ROOT
from nmtlib.config import DecodeConfig, ModelConfig, TrainConfig

REFERENCE = ROOT / "config" / "README.md"
#: the reference's section of each config dataclass
SECTIONS = {"train": TrainConfig, "decode": DecodeConfig, "variants": ModelConfig}


def rows(section: str) -> dict[str, list[str]]:
    """``{key: the backticked values of its type column}`` of the table under ``## `section```;
    a row may name several keys (`` `encoder_rnn`, `decoder_rnn` ``)."""
    text = REFERENCE.read_text(encoding="utf-8")
    body = text.split(f"\n## `{section}`\n", 1)[1].split("\n## ", 1)[0]
    found: dict[str, list[str]] = {}
    for line in body.splitlines():
        cells = re.split(r"(?<!\\)\|", line)  # `\|` separates values within a cell
        if len(cells) < 4 or not cells[1].strip().startswith("`"):
            continue
        for key in re.findall(r"`([^`]+)`", cells[1]):
            found[key] = re.findall(r"`([^`]+)`", cells[2])
    return found


def test_the_parser_reads_a_row_of_several_keys_and_values():
    assert rows("variants")["decoder_rnn"] == ["lstm", "gru"]
    assert rows("train")["optimizer"] == ["sgd", "adam"]


@pytest.mark.parametrize("section", SECTIONS)
def test_every_option_has_its_row_with_its_declared_choices(section):
    documented = rows(section)
    for f in dataclasses.fields(SECTIONS[section]):
        assert f.name in documented, f"config/README.md, ## `{section}`: no row for {f.name!r}"
        choices = f.metadata["choices"]
        if choices is not None:
            assert documented[f.name] == list(choices), f"config/README.md, ## `{section}`, {f.name!r}"
