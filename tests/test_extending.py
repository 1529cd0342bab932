"""docs/extending.md, "Adding an attention mechanism", followed as written (issue #43).

A toy mechanism, ``scaled`` (global attention whose scores are multiplied by a learnt gain and
divided by a temperature T), is added by the recipe's steps 1 and 2 to a copy of nmtlib: its class
in a module of its own, one ``Mechanism(...)`` entry in the copy's ``MECHANISMS`` in
``nmtlib/registry.py`` (with its option and its parameter count), and its option a field of the
copy's ``ModelConfig`` in ``nmtlib/config/variant.py``. Nothing else is edited. Then, as the
recipe promises "from these two, without further edits": the schema's enum and the workflow's
config check accept it, ``resolve_variant`` refuses its option on another mechanism and without
attention, the builder builds it, ``estimate_parameters`` counts it, and a variant of it trains
(``nmtlib train --variant-json``) and decodes (``nmtlib translate``). Steps 3 and 4 edit this tree's
reference and tests (config/README.md, tests/), which a copy cannot show; the tests that check
them say so themselves (tests/test_config_reference.py, tests/conftest.py's ``ALL_VARIANTS``).

A change to the recipe changes this test, and the other way round.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, TINY_TRAIN_SPEC, tiny_train_cmd

RECIPE = ROOT / "docs" / "extending.md"

#: step 1: the class, in a module of its own
MODULE = '''"""``scaled``: global attention (Luong et al. 2015 Eq. 7) with each score multiplied by a learnt
gain and divided by a temperature T before the softmax; a toy of tests/test_extending.py."""

import torch
from torch import nn

from nmtlib.models.attention import Attention, AttentionOutput, masked_softmax
from nmtlib.models.matvec import weighted_sum


class ScaledAttention(Attention):
    name = "scaled"

    def __init__(self, score, temperature: float) -> None:
        super().__init__(score)
        self.temperature = temperature
        self.gain = nn.Parameter(torch.ones(()))

    @classmethod
    def from_config(cls, score, cfg):
        return cls(score, cfg.temperature)

    def graph_key(self, step, tau=None):
        return ()  # the same operations at every step and threshold

    def forward(self, query, memory, state, step, embedded):
        positions = torch.arange(memory.mask.shape[1], device=query.device).expand(query.shape[0], -1)
        logits = self.score(query, memory.keys, positions) * self.gain / self.temperature
        weights = masked_softmax(logits, memory.mask)
        return AttentionOutput(weighted_sum(weights, memory.values), weights, memory.lengths.clone()), state
'''
#: step 2: the declaration, one entry in MECHANISMS (the gain: one parameter)
DECLARATION = ('    Mechanism("scaled", "scaled_attention:ScaledAttention", "tests/test_extending.py (a toy)",\n'
               '              options=("temperature",), parameters=lambda m: 1),\n')
#: step 2: its option, a field of ModelConfig
OPTION = '    temperature: float = option(1.0, "T that the scaled attention divides its scores by", POSITIVE)\n'

#: a variant of it at toy size, with its option
OPTIONS = {"embedding_size": 16, "hidden_size": 16, "layers": 1, "attention": "scaled", "score": "general",
           "temperature": 2.0}

#: what the copy's nmtlib reports of the mechanism, run as ``python PROBE OPTIONS TINY_CONFIG``
PROBE = '''import json, sys

import torch
import yaml

from nmtlib.config import ConfigError, ModelConfig, estimate_parameters, options_schema, resolve_variant
from nmtlib.models.attention import Attention
from nmtlib.models.builder import build_model, count_parameters
from nmtlib.registry import mechanism
from nmtlib.workflow_config import SCHEMA, validate_config

options = json.loads(sys.argv[1])


def refusal(changes):
    try:
        resolve_variant("v", {**options, **changes})
    except ConfigError as err:
        return str(err)


def built(variant):
    model = build_model(variant.model, 97 + 4, 113 + 4)
    return model, count_parameters(model)


cls = mechanism("scaled").load()
cfg = resolve_variant("mine", options)
model, count = built(cfg)
config = yaml.safe_load(open(sys.argv[2]))
config["variants"], config["ensembles"] = {"mine": options}, {}
print(json.dumps({
    "class": [issubclass(cls, Attention), cls.name],
    "enum": options_schema(ModelConfig)["attention"]["enum"],
    "resolved": [cfg.model.attention, cfg.model.temperature],
    "elsewhere": refusal({"attention": "global"}),
    "without": refusal({"attention": "none", "input_feed": False}),
    "workflow": sorted(validate_config(config, SCHEMA)),
    "attention": type(model.decoder.attention).__name__,
    "built": count,
    "global": built(resolve_variant("g", {**{k: v for k, v in options.items() if k != "temperature"},
                                          "attention": "global"}))[1],
    "estimate": estimate_parameters(cfg.model, 97, 113),
    "graph_keys": [model.graph_key(0), model.graph_key(3, 1.0)],
}))
'''


def insert_before(path: Path, anchor: str, text: str) -> None:
    """``text`` into ``path`` before the first match of the regex ``anchor``, as a developer would."""
    source = path.read_text(encoding="utf-8")
    m = re.search(anchor, source)
    assert m, f"{path}: {anchor!r} not found: the recipe's place for this edit has moved"
    path.write_text(source[:m.start()] + text + source[m.start():], encoding="utf-8")


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    """The environment of a process that sees nmtlib with the toy mechanism added by the recipe:
    a copy of nmtlib (beside a link to this tree's workflow/, where the schema is) and the
    mechanism's module, both on the PYTHONPATH."""
    tree = tmp_path_factory.mktemp("extended")
    shutil.copytree(ROOT / "nmtlib", tree / "nmtlib", ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "workflow").symlink_to(ROOT / "workflow")
    plugin = tree / "plugin"
    plugin.mkdir()
    (plugin / "scaled_attention.py").write_text(MODULE, encoding="utf-8")
    # the entry goes last in MECHANISMS, the field last in ModelConfig
    insert_before(tree / "nmtlib" / "registry.py", r"\)\n\nATTENTION_NAMES", DECLARATION)
    insert_before(tree / "nmtlib" / "config" / "variant.py", r"(?<=\n)\n\n@dataclass\(frozen=True\)\nclass TrainConfig",
                  OPTION)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(plugin)])}


def test_the_recipe_says_what_this_test_does():
    recipe = RECIPE.read_text(encoding="utf-8").split("## Adding an attention mechanism")[1].split("\n## ")[0]
    recipe = " ".join(recipe.split())  # as words, however the lines are wrapped
    for step in ("(or a module of its own)", "`graph_key(step, tau=None)`", "`from_config(score, cfg)`",
                 "`MECHANISMS` in `nmtlib/registry.py`", "on the `PYTHONPATH`", "`parameters=lambda m:",
                 "`ModelConfig` (or `TrainConfig`, `DecodeConfig`) in `nmtlib/config/variant.py`",
                 "`option(default, help, range)`", "`--variant-json`", "tests/test_extending.py"):
        assert step in recipe, step


def test_config_checks_the_schema_and_the_builder_take_it(env, tmp_path):
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")
    run = subprocess.run([sys.executable, str(tmp_path / "probe.py"), json.dumps(OPTIONS),
                          str(ROOT / "tests" / "configs" / "tiny.yaml")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout)
    assert seen["class"] == [True, "scaled"]
    assert seen["enum"] == ["none", "global", "local-m", "local-p", "flexible", "scaled"]  # after those declared
    assert seen["resolved"] == ["scaled", 2.0]
    assert seen["elsewhere"] == ("variants.v.temperature (T that the scaled attention divides its scores by) "
                                 "belongs to attention 'scaled', not 'global'")
    assert seen["without"] == ("variants.v.temperature: this option belongs to an attention mechanism, but "
                               "attention is 'none'")
    assert seen["workflow"] == ["mine"]
    assert seen["attention"] == "ScaledAttention"
    # global attention of the same sizes, and the gain
    assert seen["built"] == seen["global"] + 1 == seen["estimate"]
    # the model calls the class's graph_key(step, tau) as the recipe declares it: no TypeError
    assert seen["graph_keys"] == [[], []]


def test_a_variant_of_it_trains_and_decodes(env, tiny_corpus, tmp_path):
    spec = {"name": "mine", "options": {**OPTIONS, "train": TINY_TRAIN_SPEC["options"]["train"]}}
    # run outside this tree: ``python -m`` puts the working directory first on the path
    train = subprocess.run(tiny_train_cmd(tiny_corpus, tmp_path / "mine", spec), capture_output=True, text=True,
                           env=env, cwd=tmp_path, timeout=600)
    assert train.returncode == 0, train.stderr[-3000:]
    assert json.loads(train.stdout.splitlines()[-1])["step"] == 6  # TINY_TRAIN_SPEC: max_steps 6
    c = tiny_corpus
    translate = subprocess.run(
        [sys.executable, "-m", "nmtlib", "translate", "--model", str(tmp_path / "mine" / "model.pt"),
         "--src", str(c / "test.src"), "--src-vocab", str(c / "vocab.src"), "--tgt-vocab", str(c / "vocab.tgt"),
         "--out", str(tmp_path / "test"), "--beam", "3", "--threads", "1", "--no-progress"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert translate.returncode == 0, translate.stderr[-3000:]
    sources = (c / "test.src").read_text(encoding="utf-8").splitlines()
    details = [json.loads(line) for line in (tmp_path / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len((tmp_path / "test.txt").read_text(encoding="utf-8").splitlines()) == len(sources) == len(details)
    # it scores every source position at every step, as global attention does
    assert [d["avg_window"] for d in details] == [float(len(s.split())) for s in sources]
