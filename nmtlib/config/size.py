"""A model's size from its options, without torch: the workflow warns of a variant far larger than
the others of its experiment (:func:`nmtlib.workflow_config.size_warnings`) when it checks a config,
which must not pay for importing PyTorch."""

from __future__ import annotations

from nmtlib.config.variant import ModelConfig
from nmtlib.registry import mechanism

#: the vocabulary's special symbols (<pad>, <unk>, <bos>, <eos>) on top of its top-K words
_SPECIALS = 4


def estimate_parameters(m: ModelConfig, src_vocab: int, tgt_vocab: int) -> int:
    """The number of parameters of the model :func:`nmtlib.models.builder.build_model` makes
    from ``m`` with vocabularies of ``src_vocab`` and ``tgt_vocab`` words (plus the special
    symbols): embeddings, the encoder's and decoder's RNN layers, the bridge, the attention score,
    the mechanism's own layers (its declaration's :attr:`~nmtlib.registry.Mechanism.parameters`),
    the output layer and the softmax. It restates the builder's layer shapes;
    tests/test_config_traps.py holds it to the built model's count for every variant of every
    shipped experiment."""
    E, H = m.embedding_size, m.hidden_size
    dirs = 2 if m.bidirectional else 1
    memory = dirs * H

    def rnn(cell: str, inputs: int, layers: int, directions: int) -> int:
        gates = 4 if cell == "lstm" else 3
        first = gates * H * (inputs + H + 2)
        rest = gates * H * (directions * H + H + 2)
        return directions * (first + (layers - 1) * rest)

    attention = m.attention != "none"
    if m.output == "maxout":
        out_size = m.output_size
        output = (H + 1) * 2 * out_size + (E + memory) * 2 * out_size
    elif m.output == "fc":
        out_size = m.output_size
        output = (H + memory + 1) * out_size
    else:
        out_size = H
        output = (memory + H) * H if attention else 0
    decoder_input = E + (out_size if m.input_feed else 0) + (memory if m.query == "previous" and attention else 0)
    score = own = 0
    if attention:
        inner = m.attention_size or H
        score = {"general": memory * H, "concat": (H + memory + 1) * inner, "additive": (H + memory + 1) * inner,
                 "location": (H + 1) * m.max_positions}.get(m.score, 0)
        own = mechanism(m.attention).parameters(m)
    bridge = (H + 1) * H if m.bridge == "backward-tanh" else 0
    vs, vt = src_vocab + _SPECIALS, tgt_vocab + _SPECIALS
    return ((vs + vt) * E + rnn(m.encoder_rnn, E, m.layers, dirs) + rnn(m.decoder_rnn, decoder_input, m.layers, 1)
            + bridge + score + own + output + (out_size + 1) * vt)
