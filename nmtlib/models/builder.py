"""Turn a :class:`~nmtlib.config.ModelConfig` into a model: every variant is a composition of
an encoder, an optional attention mechanism with a score function, a decoder and an output layer."""

from __future__ import annotations

from torch import nn

from nmtlib.config import ModelConfig
from nmtlib.models.attention import Attention
from nmtlib.models.decoders import (
    AttentionalOutput,
    FullyConnectedOutput,
    MaxoutOutput,
    OutputLayer,
    RecurrentDecoder,
)
from nmtlib.models.encoders import RecurrentEncoder
from nmtlib.models.scores import build_score
from nmtlib.models.seq2seq import Seq2Seq
from nmtlib.registry import mechanism


def build_attention(cfg: ModelConfig, memory_size: int) -> Attention | None:
    if cfg.attention == "none":
        return None
    score_opts = {}
    if cfg.score == "location":
        score_opts["max_positions"] = cfg.max_positions
    elif cfg.score in ("concat", "additive") and cfg.attention_size:
        score_opts["attention_size"] = cfg.attention_size
    score = build_score(cfg.score, cfg.hidden_size, memory_size, **score_opts)
    return mechanism(cfg.attention).load().from_config(score, cfg)


def build_output(cfg: ModelConfig, memory_size: int) -> OutputLayer:
    if cfg.output == "maxout":
        return MaxoutOutput(cfg.hidden_size, memory_size, cfg.embedding_size, cfg.output_size)
    if cfg.output == "fc":
        return FullyConnectedOutput(cfg.hidden_size, memory_size, cfg.output_size)
    return AttentionalOutput(cfg.hidden_size, memory_size, attentional=cfg.attention != "none")


def build_model(cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int, padding_idx: int = 0) -> Seq2Seq:
    encoder = RecurrentEncoder(
        src_vocab_size,
        cfg.embedding_size,
        cfg.hidden_size,
        layers=cfg.layers,
        rnn=cfg.encoder_rnn,
        bidirectional=cfg.bidirectional,
        reverse=cfg.reverse_source,
        dropout=cfg.dropout,
        padding_idx=padding_idx,
    )
    memory_size = encoder.output_size
    decoder = RecurrentDecoder(
        tgt_vocab_size,
        cfg.embedding_size,
        cfg.hidden_size,
        memory_size,
        output=build_output(cfg, memory_size),
        attention=build_attention(cfg, memory_size),
        layers=cfg.layers,
        rnn=cfg.decoder_rnn,
        query=cfg.query,
        input_feed=cfg.input_feed,
        bridge=cfg.bridge,
        encoder_hidden_size=cfg.hidden_size,
        dropout=cfg.dropout,
        padding_idx=padding_idx,
    )
    return Seq2Seq(encoder, decoder)


def init_uniform(model: nn.Module, init_range: float | None) -> None:
    """Luong §4.1: every parameter uniform in [−r, r]; padding embeddings stay zero."""
    if init_range is None:
        return
    for p in model.parameters():
        nn.init.uniform_(p, -init_range, init_range)
    for module in model.modules():
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            module.weight.data[module.padding_idx].zero_()


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
