"""The papers' presets: the architecture a variant starts from (``arch``) and the training recipe
(``train.preset``). Each is a partial set of options; :func:`nmtlib.config.resolve.resolve_variant`
lays a variant's own keys over it."""

from __future__ import annotations

from typing import Any

#: paper architectures: defaults a variant starts from
ARCH_PRESETS: dict[str, dict[str, Any]] = {
    # Luong et al. 2015 §4.1: 4×1000 stacked LSTM, 1000-d embeddings
    "luong": {},
    # Bahdanau et al. 2015: bi-GRU encoder, 1-layer GRU decoder, additive attention on s_{i−1},
    # maxout deep output; 620-d embeddings, 1000 units, maxout 500
    "rnnsearch": dict(
        embedding_size=620, layers=1, encoder_rnn="gru", bidirectional=True, decoder_rnn="gru",
        attention="global", score="additive", query="previous", input_feed=False, output="maxout",
        output_size=500, bridge="backward-tanh",
    ),
    # Shu & Nakayama 2017 §5.1: bi-LSTM encoder, 1-layer LSTM decoder fed [E i_t; c_t], concat score
    # on h_{t−1}, 600-unit layer before the softmax
    "shu": dict(
        layers=1, encoder_rnn="lstm", bidirectional=True, decoder_rnn="lstm", attention="global",
        score="concat", query="previous", input_feed=False, output="fc", output_size=600,
        bridge="backward-tanh",
    ),
}

#: training recipes of the papers
TRAIN_PRESETS: dict[str, dict[str, Any]] = {
    # Luong §4.1: SGD lr 1, 10 epochs, halve after epoch 5, batch 128, clip 5, uniform ±0.1
    "luong": {},
    # Shu §5.1: Adam 1e−4, 6 epochs, halve from epoch 4, clip 3, batch 64
    "shu": dict(optimizer="adam", lr=1e-4, epochs=6, decay_start=4, clip=3.0, batch_size=64),
}
