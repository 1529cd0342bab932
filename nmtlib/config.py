"""Variant configuration: named presets from the papers, overrides, and semantic validation.

A *variant* is a named dict of model options plus optional ``train`` and ``decode`` sub-dicts.
``arch`` picks a paper's architecture preset (``luong``, ``rnnsearch``, ``shu``) and
``train.preset`` a paper's training recipe (``luong``, ``shu``); every other key overrides a
preset field. The JSON schema (``workflow/schemas/config.schema.yaml``) checks types and names;
:func:`resolve_variant` checks what a schema cannot — combinations that make no sense — and
says why.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from nmtlib.registry import ATTENTION_NAMES, SCORE_NAMES


class ConfigError(ValueError):
    """A configuration problem; the message names the key and the allowed values."""


def setting_name(beam: int, tau: float | None = None) -> str:
    """A decoding setting as file names write it: ``beam<K>``, or ``beam<K>.tau<τ>`` (τ as ``%g``)."""
    return f"beam{beam}" if tau is None else f"beam{beam}.tau{tau:g}"


def _check_taus(taus: tuple[float, ...], where: str) -> None:
    """Each τ must come back from its file name (``%g`` keeps 6 significant digits, and the
    workflow's file patterns take digits and dots only), and no two may share one."""
    seen: dict[str, float] = {}
    for tau in taus:
        text = f"{tau:g}"
        if not re.fullmatch(r"[0-9.]+", text) or float(text) != tau:
            raise ConfigError(f"{where}: τ {tau!r} is written {text!r} in file names, which the workflow cannot read "
                              f"back as {tau!r}; give a plain decimal of at most 6 significant digits")
        if text in seen:
            raise ConfigError(f"{where}: τ {seen[text]!r} and {tau!r} are one setting (file names: tau{text})")
        seen[text] = tau


@dataclass(frozen=True)
class ModelConfig:
    arch: str = "luong"
    embedding_size: int = 1000
    hidden_size: int = 1000
    layers: int = 4
    encoder_rnn: str = "lstm"
    bidirectional: bool = False
    decoder_rnn: str = "lstm"
    reverse_source: bool = False
    dropout: float = 0.0
    attention: str = "global"  #: none | global | local-m | local-p | flexible
    score: str = "general"  #: dot | general | concat | additive | location
    query: str = "current"  #: current (Luong) | previous (Bahdanau, Shu)
    input_feed: bool = True
    output: str = "attentional"  #: attentional | maxout | fc
    output_size: int | None = None  #: maxout units l (Bahdanau: 500) or fc units (Shu: 600)
    bridge: str = "final"  #: final | backward-tanh | zero
    window: int = 10  #: D of local attention
    max_positions: int = 100  #: L_max of the location score
    sigma: float = 1.5  #: σ of Flexible Attention
    attention_size: int | None = None  #: inner size of concat/additive scores (default: hidden)


@dataclass(frozen=True)
class TrainConfig:
    preset: str = "luong"
    optimizer: str = "sgd"  #: sgd | adam
    lr: float = 1.0
    epochs: int = 10
    decay_start: int = 6  #: first epoch (1-based) trained with a halved rate; halves every epoch after
    decay_factor: float = 0.5
    batch_size: int = 128
    clip: float = 5.0  #: rescale the gradient when its norm exceeds this
    init_range: float | None = 0.1  #: uniform init in [−r, r]; None keeps PyTorch's defaults
    max_len: int = 50
    loss_norm: str = "sentences"  #: sentences (sum / batch size, Luong) | tokens
    checkpoint_every: int = 500  #: steps between checkpoints (and one at every epoch end)
    eval_every: int = 0  #: steps between dev perplexity evaluations (0: only at epoch ends)
    patience: int = 0  #: stop once this many evaluations in a row improve dev perplexity by < min_improvement (0: off)
    min_improvement: float = 0.02  #: relative dev-perplexity gain over the best so far that counts as improving
    beta: float = 0.0  #: Flexible Attention fine-tuning weight, J − β·mean_t g(t) (Shu Eq. 9)
    max_steps: int = 0  #: stop after this many updates (0: run all epochs); for smoke tests
    bf16: bool = False  #: bf16 autocast on CUDA
    cuda_graphs: bool = False  #: replay the decoder loop as CUDA graphs (CUDA only; see nmtlib.train.graphs)
    device: str = "auto"  #: auto | cpu | cuda


@dataclass(frozen=True)
class DecodeConfig:
    beam: int = 12
    max_len_ratio: float = 2.0  #: stop at ratio × source length + 10
    length_norm: bool = False  #: rank finished hypotheses by log-prob / length
    batch_size: int = 64
    unk_replace: bool = True
    taus: tuple[float, ...] = ()  #: Flexible Attention thresholds to decode with (besides τ = ∞)
    cuda_graphs: bool = False  #: replay beam-search steps as CUDA graphs (CUDA only; see nmtlib.decode.graphs)
    tf32: bool = False  #: float32 matrix products in TF32 on CUDA (see nmtlib.decode.translate.matmul_precision)
    in_flight: int = 1  #: batches decoded at once on CUDA, their steps interleaved (see nmtlib.decode.interleave)


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

RNN_CHOICES = ("lstm", "gru")
CHOICES: dict[str, tuple[str, ...]] = {
    "arch": tuple(ARCH_PRESETS),
    "attention": ("none", *ATTENTION_NAMES),
    "score": SCORE_NAMES,
    "query": ("current", "previous"),
    "output": ("attentional", "maxout", "fc"),
    "bridge": ("final", "backward-tanh", "zero"),
    "encoder_rnn": RNN_CHOICES,
    "decoder_rnn": RNN_CHOICES,
    "train.preset": tuple(TRAIN_PRESETS),
    "train.optimizer": ("sgd", "adam"),
    "train.loss_norm": ("sentences", "tokens"),
    "train.device": ("auto", "cpu", "cuda"),
}

VARIANT_META_KEYS = ("train", "decode", "finetune_from", "description", "paper_row")
#: keys that label a variant for reports and do not change what is trained
LABEL_KEYS = ("description", "paper_row")


@dataclass(frozen=True)
class VariantConfig:
    name: str
    model: ModelConfig
    train: TrainConfig
    decode: DecodeConfig
    finetune_from: str | None = None  #: variant whose trained checkpoint this one starts from
    description: str = ""
    paper_row: dict[str, Any] = field(default_factory=dict)  #: paper table → row key(s) it regenerates (report/paper.py)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def training_dict(self) -> dict[str, Any]:
        """What determines a trained model (no report labels): checkpoints are keyed by it."""
        return {k: v for k, v in self.to_dict().items() if k not in LABEL_KEYS}

    @property
    def attention_label(self) -> str:
        """Value of the ``attention`` column in results tables."""
        if self.model.arch == "rnnsearch" and self.model.attention == "global":
            return "rnnsearch"
        return self.model.attention

    @property
    def score_label(self) -> str:
        return "" if self.model.attention == "none" else self.model.score


def _fields(cls: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


def _build(cls: type, values: dict[str, Any], where: str) -> Any:
    known = _fields(cls)
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ConfigError(f"{where}: unknown option(s) {unknown}; valid options: {sorted(known)}")
    for key, value in values.items():
        _check_type(known[key], value, f"{where}.{key}")
        choices = CHOICES.get(key if cls is ModelConfig else f"{where.rsplit('.', 1)[-1]}.{key}")
        if choices is not None and value not in choices:
            raise ConfigError(f"{where}.{key}: {value!r} is not one of {list(choices)}")
    if cls is DecodeConfig and "taus" in values:
        values = {**values, "taus": tuple(float(t) for t in values["taus"])}
    return cls(**values)


_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,), "float": (int, float), "bool": (bool,), "str": (str,), "None": (type(None),),
}


def _check_type(f: dataclasses.Field, value: Any, where: str) -> None:
    """Check a value against the field's annotation (``int``, ``float | None``, ``tuple[float, ...]``)."""
    annotation = str(f.type)
    if annotation.startswith("tuple"):
        ok = isinstance(value, (list, tuple)) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
        expected = "a list of numbers"
    else:
        names = [a.strip() for a in annotation.split("|")]
        allowed = tuple(t for n in names for t in _TYPES.get(n, (object,)))
        ok = isinstance(value, allowed) and not (isinstance(value, bool) and "bool" not in names)
        expected = " or ".join(names)
    if not ok:
        raise ConfigError(f"{where}: expected {expected}, got {value!r} ({type(value).__name__})")


def resolve_variant(
    name: str,
    raw: dict[str, Any],
    train_defaults: dict[str, Any] | None = None,
    decode_defaults: dict[str, Any] | None = None,
    variants: dict[str, dict[str, Any]] | None = None,
) -> VariantConfig:
    """Turn a variant's YAML dict into a checked :class:`VariantConfig`.

    Order of precedence (last wins): dataclass defaults < architecture preset < the parent
    variant's model (``finetune_from``) < the variant's own keys; for training: defaults < the
    recipe preset < experiment-level ``train_defaults`` < the variant's ``train``.
    """
    where = f"variants.{name}"
    raw = dict(raw or {})
    finetune_from = raw.pop("finetune_from", None)
    train_raw = dict(raw.pop("train", None) or {})
    decode_raw = dict(raw.pop("decode", None) or {})
    description = raw.pop("description", "")
    paper_row = dict(raw.pop("paper_row", None) or {})

    model_raw = dict(raw)
    if finetune_from is not None:
        if not variants or finetune_from not in variants:
            raise ConfigError(
                f"{where}.finetune_from: {finetune_from!r} is not a variant of this experiment; "
                f"variants: {sorted(variants or {})}"
            )
        parent = {k: v for k, v in variants[finetune_from].items() if k not in VARIANT_META_KEYS}
        if set(model_raw) - {"arch"}:
            raise ConfigError(
                f"{where}: a fine-tuning variant inherits the model of {finetune_from!r}; "
                f"remove the model options {sorted(set(model_raw) - {'arch'})}"
            )
        model_raw = parent
    arch = model_raw.get("arch", "luong")
    if arch not in ARCH_PRESETS:
        raise ConfigError(f"{where}.arch: {arch!r} is not one of {list(ARCH_PRESETS)}")
    model = _build(ModelConfig, {**ARCH_PRESETS[arch], **model_raw}, where)
    _check_model(model, model_raw, where)

    merged_train = {**(train_defaults or {}), **train_raw}
    preset = merged_train.get("preset", "luong")
    if preset not in TRAIN_PRESETS:
        raise ConfigError(f"{where}.train.preset: {preset!r} is not one of {list(TRAIN_PRESETS)}")
    recipe = dict(TRAIN_PRESETS[preset])
    if preset == "luong" and model.dropout > 0:
        # Luong §4.1: with dropout, 12 epochs and halving after epoch 8
        recipe.update(epochs=12, decay_start=9)
    train = _build(TrainConfig, {**recipe, **merged_train}, f"{where}.train")
    if train.beta and model.attention != "flexible":
        raise ConfigError(f"{where}.train.beta: the β objective needs attention 'flexible', not {model.attention!r}")
    decode = _build(DecodeConfig, {**(decode_defaults or {}), **decode_raw}, f"{where}.decode")
    if decode.taus and model.attention != "flexible":
        raise ConfigError(f"{where}.decode.taus: thresholds τ apply to attention 'flexible' only")
    _check_taus(decode.taus, f"{where}.decode.taus")
    return VariantConfig(name, model, train, decode, finetune_from, description, paper_row)


def _check_model(m: ModelConfig, given: dict[str, Any], where: str) -> None:
    """Reject combinations that have no meaning, with the reason."""

    def fail(key: str, why: str) -> None:
        raise ConfigError(f"{where}.{key}: {why}")

    if m.attention == "none":
        for key in ("window", "sigma", "max_positions", "attention_size"):
            if key in given:
                fail(key, "this option belongs to an attention mechanism, but attention is 'none'")
        if m.input_feed:
            fail("input_feed", "input feeding feeds the attentional vector h̃_t; a model without attention has none")
        if m.output != "attentional":
            fail("output", f"output {m.output!r} reads the context vector c_t; it needs an attention mechanism")
    else:
        if m.score == "location" and m.attention != "global":
            fail("score", f"'location' is a fixed-length vector over positions (Luong Eq. 9); it is defined "
                          f"for global attention only, not {m.attention!r}")
        if "window" in given and m.attention not in ("local-m", "local-p"):
            fail("window", f"the window D belongs to local-m/local-p attention, not {m.attention!r}")
        if "sigma" in given and m.attention != "flexible":
            fail("sigma", f"σ belongs to flexible attention, not {m.attention!r}")
        if "max_positions" in given and m.score != "location":
            fail("max_positions", "L_max belongs to the 'location' score")
        memory = m.hidden_size * (2 if m.bidirectional else 1)
        if m.score == "dot" and memory != m.hidden_size:
            fail("score", f"'dot' needs equal encoder and decoder state sizes ({memory} vs {m.hidden_size}); "
                          f"use 'general' or 'concat'")
    if m.input_feed and m.query == "previous":
        fail("input_feed", "input feeding is Luong's (query: current); decoders with query 'previous' feed c_t already")
    if m.output in ("maxout", "fc") and not m.output_size:
        fail("output_size", f"output {m.output!r} needs output_size (maxout units or fc units)")
    if m.bridge == "backward-tanh" and not m.bidirectional:
        fail("bridge", "'backward-tanh' initialises from ←h_1 of a bidirectional encoder; set bidirectional: true")
    if m.bridge == "final" and m.encoder_rnn != m.decoder_rnn:
        fail("bridge", "'final' copies the encoder's final states; encoder_rnn and decoder_rnn must match")
    if not 0 <= m.dropout < 1:
        fail("dropout", f"must be in [0, 1), got {m.dropout}")
