"""One decode-settings object (issue #28, item 1): the workflow hands ``nmtlib translate`` every
decoding option of a run as one JSON object (``nmtlib.config.run_settings``), checked against the
options' definitions on the way in; flags given beside it win."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import train_tiny_model
from nmtlib.config import ConfigError, DecodeConfig, check_run_settings, run_settings

SPEC = {"name": "g", "options": {"embedding_size": 16, "hidden_size": 16, "layers": 1, "attention": "global",
                                 "score": "general",
                                 "train": {"optimizer": "adam", "lr": 0.01, "batch_size": 32, "epochs": 4,
                                           "max_steps": 60}}}


def test_a_run_is_its_variants_options_with_the_settings_beam_and_tau():
    decode = DecodeConfig(beam=5, taus=(0.8, 1.2), max_len_ratio=1.5, unk_replace=False)
    settings = run_settings(decode, "beam5.tau1.2")
    assert "taus" not in settings
    assert (settings["beam"], settings["tau"], settings["max_len_ratio"], settings["unk_replace"]) == (5, 1.2, 1.5, False)
    assert run_settings(decode, "beam5")["tau"] is None
    # what the workflow writes is what translate reads back
    assert check_run_settings(json.loads(json.dumps(settings)), "x") == settings


@pytest.mark.parametrize("raw,message", [
    ({"beam": 0}, "x.beam: must be at least 1, got 0"),
    ({"tau": -1}, "x.tau:"),
    ({"beams": 5}, "unknown decoding option 'beams'"),
    ({"taus": [1.2]}, "unknown decoding option 'taus'"),
    ([5], "expected a JSON object"),
])
def test_bad_settings_name_the_key(raw, message):
    with pytest.raises(ConfigError, match=None) as err:
        check_run_settings(raw, "x")
    assert message in str(err.value)


@pytest.fixture(scope="module")
def model(tiny_corpus, tmp_path_factory) -> Path:
    return train_tiny_model(tiny_corpus, tmp_path_factory.mktemp("decode-settings-model"), SPEC)


def translate(model: Path, corpus: Path, prefix: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([
        sys.executable, "-m", "nmtlib", "translate", "--model", str(model), "--src", str(corpus / "test.src"),
        "--src-vocab", str(corpus / "vocab.src"), "--tgt-vocab", str(corpus / "vocab.tgt"),
        "--out", str(prefix), "--threads", "1", "--no-progress", *extra], capture_output=True, text=True)


def test_the_json_decodes_as_the_flags_do_and_a_flag_beside_it_wins(model, tiny_corpus, tmp_path):
    flags = translate(model, tiny_corpus, tmp_path / "flags", "--beam", "3", "--max-len-ratio", "1.5")
    as_json = translate(model, tiny_corpus, tmp_path / "json", "--decode-json",
                        json.dumps({"beam": 3, "max_len_ratio": 1.5, "unk_replace": True}))
    both = translate(model, tiny_corpus, tmp_path / "both", "--decode-json",
                     json.dumps({"beam": 1, "max_len_ratio": 1.5}), "--beam", "3")
    for run in (flags, as_json, both):
        assert run.returncode == 0, run.stderr[-2000:]
        assert json.loads(run.stdout.splitlines()[-1])["beam"] == 3
    out = (tmp_path / "flags.txt").read_text()
    assert out and out == (tmp_path / "json.txt").read_text() == (tmp_path / "both.txt").read_text()
    beam1 = translate(model, tiny_corpus, tmp_path / "beam1", "--decode-json", json.dumps({"beam": 1}))
    assert json.loads(beam1.stdout.splitlines()[-1])["beam"] == 1


def test_a_bad_json_argument_is_one_line_naming_the_flag(model, tiny_corpus, tmp_path):
    for text, why in (("{beam: 3}", "not JSON"), ('{"beam": 0}', "beam: must be at least 1")):
        run = translate(model, tiny_corpus, tmp_path / "bad", "--decode-json", text)
        assert run.returncode == 2
        assert "argument --decode-json" in run.stderr and why in run.stderr
        assert "Traceback" not in run.stderr
