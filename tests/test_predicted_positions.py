"""scripts/predicted_positions.py: local-p's predicted position p_t / S at every forced-decoding step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import ROOT, load_script, train_tiny_model

positions = load_script(ROOT / "scripts" / "predicted_positions.py")

SPEC = {"name": "lp", "options": {"embedding_size": 16, "hidden_size": 16, "layers": 1, "attention": "local-p",
                                  "score": "general", "reverse_source": True,
                                  "train": {"optimizer": "adam", "lr": 0.01, "batch_size": 32, "epochs": 1,
                                            "max_steps": 4}}}


@pytest.fixture(scope="module")
def model_path(tiny_corpus, tmp_path_factory) -> Path:
    return train_tiny_model(tiny_corpus, tmp_path_factory.mktemp("local-p"), SPEC)


def test_one_value_per_step_of_each_sentence_and_a_flat_predictor_gives_one_half(model_path, tiny_corpus) -> None:
    model, data, device = positions.load(model_path, tiny_corpus / "test.src", tiny_corpus / "test.tgt")
    steps = sum(len(line.split()) + 1 for line in (tiny_corpus / "test.tgt").read_text().splitlines())
    trained = positions.relative_positions(model, data, device, batch_size=16)
    assert len(trained) == steps and ((trained > 0) & (trained < 1)).all()
    # W_p = 0: tanh(0) = 0, so sigmoid(v_p · 0) = 1/2 and p_t = S / 2 at every step
    with torch.no_grad():
        model.decoder.attention.W_p.weight.zero_()
    flat = positions.relative_positions(model, data, device, batch_size=16)
    assert len(flat) == steps and np.allclose(flat, 0.5)
    # the model's own method is back after the run (the recording wrapper was on this instance only)
    assert "aligned_position" not in vars(model.decoder.attention)


def test_a_model_without_local_p_is_refused() -> None:
    from nmtlib.config import resolve_variant
    from nmtlib.models.builder import build_model

    options = {**SPEC["options"], "attention": "global"}
    del options["train"]
    model = build_model(resolve_variant("g", options).model, 40, 50)
    with pytest.raises(SystemExit, match="not local-p"):
        positions.relative_positions(model, None, torch.device("cpu"))  # refused before any data is read
