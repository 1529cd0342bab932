"""scripts/flexible_gates.py: Flexible Attention's strength g(t) at every forced-decoding step."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import ROOT, load_script, train_tiny_model

gates_mod = load_script(ROOT / "scripts" / "flexible_gates.py")

SPEC = {"name": "flex", "options": {"arch": "shu", "attention": "flexible", "embedding_size": 16, "hidden_size": 16,
                                    "output_size": 16, "score": "concat",
                                    "train": {"optimizer": "adam", "lr": 0.01, "batch_size": 32, "epochs": 1,
                                              "max_steps": 4}}}


@pytest.fixture(scope="module")
def model_path(tiny_corpus, tmp_path_factory) -> Path:
    return train_tiny_model(tiny_corpus, tmp_path_factory.mktemp("flexible"), SPEC)


def test_one_strength_per_step_of_each_sentence_and_a_flat_gate_gives_its_bias(model_path, tiny_corpus) -> None:
    model, data, device = gates_mod.load(model_path, tiny_corpus / "test.src", tiny_corpus / "test.tgt")
    steps = sum(len(line.split()) + 1 for line in (tiny_corpus / "test.tgt").read_text().splitlines())
    trained = gates_mod.gates(model, data, device, batch_size=16)
    assert len(trained) == steps and ((trained > 0) & (trained < 1)).all()
    # v_g = 0 and b_g = ln 3: g(t) = sigmoid(ln 3) = 3 / 4 at every step
    with torch.no_grad():
        model.decoder.attention.v_g.weight.zero_()
        model.decoder.attention.v_g.bias.fill_(math.log(3))
    flat = gates_mod.gates(model, data, device, batch_size=16)
    assert len(flat) == steps and np.allclose(flat, 0.75, atol=1e-6)
    assert "strength" not in vars(model.decoder.attention)  # the model's own method is back


def test_the_half_width_is_where_the_penalty_reaches_tau() -> None:
    # g (s − p)² / (2σ²) = τ at |s − p| = σ √(2τ / g): σ = 1.5, τ = 1.2, g = 1 → 1.5 √2.4; g = 0.1 → 1.5 √24
    assert gates_mod.half_width(np.array([1.0, 0.1]), 1.5, 1.2) == pytest.approx([2.32379, 7.34847], abs=1e-5)


def test_a_model_without_flexible_attention_is_refused() -> None:
    from nmtlib.config import resolve_variant
    from nmtlib.models.builder import build_model

    options = {**SPEC["options"], "attention": "global"}
    del options["train"]
    model = build_model(resolve_variant("g", options).model, 40, 50)
    with pytest.raises(SystemExit, match="not Flexible Attention"):
        gates_mod.gates(model, None, torch.device("cpu"))  # refused before any data is read
