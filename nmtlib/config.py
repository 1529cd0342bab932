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
import math
import re
from dataclasses import dataclass, field
from typing import Any

from nmtlib.registry import ATTENTION_NAMES, SCORE_NAMES, option_owners


class ConfigError(ValueError):
    """A configuration problem; the message names the key and the allowed values."""


#: a decoding setting in file names (the workflow's wildcard constraint uses it too)
SETTING_PATTERN = r"beam(\d+)(?:\.tau([0-9.]+))?"


def setting_name(beam: int, tau: float | None = None) -> str:
    """A decoding setting as file names write it: ``beam<K>``, or ``beam<K>.tau<τ>`` (τ as ``%g``).
    :func:`parse_setting` reads it back; :func:`_check_taus` makes sure every τ survives the trip."""
    return f"beam{beam}" if tau is None else f"beam{beam}.tau{tau:g}"


def parse_setting(name: str) -> tuple[int, float | None]:
    """``beam12.tau1.2`` → ``(12, 1.2)``; ``beam5`` → ``(5, None)`` (τ = ∞)."""
    m = re.fullmatch(SETTING_PATTERN, name)
    if m is None:
        raise ValueError(f"{name!r} is not a decoding setting (beam<K> or beam<K>.tau<τ>)")
    return int(m.group(1)), (float(m.group(2)) if m.group(2) else None)


def _run_keys() -> list[str]:
    """The decode options a single run takes as they are (all but ``taus``: a run has one ``tau``)."""
    return [f.name for f in dataclasses.fields(DecodeConfig) if f.name != "taus"]


def run_settings(decode: DecodeConfig, setting: str) -> dict[str, Any]:
    """Everything one decoding run is decoded with: the variant's ``decode`` options but ``taus``,
    with the run's ``beam`` and ``tau`` from its ``setting`` (:func:`setting_name`). The workflow
    hands it to ``nmtlib translate --decode-json``; :func:`check_run_settings` reads it back."""
    beam, tau = parse_setting(setting)
    return {**{key: getattr(decode, key) for key in _run_keys()}, "beam": beam, "tau": tau}


def check_run_settings(raw: Any, where: str) -> dict[str, Any]:
    """A :func:`run_settings` dict as given (JSON), each value checked against its option's
    definition; a missing key takes :class:`DecodeConfig`'s default, ``tau`` None (τ = ∞)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a JSON object of decoding options, got {raw!r}")
    known = _run_keys()
    settings: dict[str, Any] = {key: getattr(DecodeConfig, key) for key in known}
    for key, value in raw.items():
        if key == "tau":
            settings[key] = None if value is None else check_option(DecodeConfig, "taus", [value], f"{where}.tau")[0]
        elif key in known:
            settings[key] = check_option(DecodeConfig, key, value, f"{where}.{key}")
        else:
            raise ConfigError(f"{where}: unknown decoding option {key!r}; options: {', '.join([*known, 'tau'])}")
    settings.setdefault("tau", None)
    return settings


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

@dataclass(frozen=True)
class Range:
    """The allowed interval of a numeric option (either bound may be open or absent)."""

    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    exclusive_maximum: float | None = None

    def violation(self, value: float) -> str | None:
        """Why ``value`` is outside the range, or ``None`` when it is inside."""
        if isinstance(value, float) and not math.isfinite(value):
            return f"must be a finite number, got {value}"
        if self.minimum is not None and value < self.minimum:
            return f"must be at least {self.minimum:g}, got {value}"
        if self.exclusive_minimum is not None and value <= self.exclusive_minimum:
            return f"must be greater than {self.exclusive_minimum:g}, got {value}"
        if self.maximum is not None and value > self.maximum:
            return f"must be at most {self.maximum:g}, got {value}"
        if self.exclusive_maximum is not None and value >= self.exclusive_maximum:
            return f"must be less than {self.exclusive_maximum:g}, got {value}"
        return None

    def schema(self) -> dict[str, float]:
        names = {"minimum": "minimum", "exclusive_minimum": "exclusiveMinimum", "maximum": "maximum",
                 "exclusive_maximum": "exclusiveMaximum"}
        return {names[k]: v for k, v in dataclasses.asdict(self).items() if v is not None}


AT_LEAST_1 = Range(minimum=1)
AT_LEAST_0 = Range(minimum=0)
POSITIVE = Range(exclusive_minimum=0)
#: τ of Flexible Attention (Shu & Nakayama Eq. 6): a positive threshold on the penalty; ∞ is "no τ"
TAU = POSITIVE


def option(default: Any, help: str, range: Range | None = None, choices: tuple[str, ...] | None = None) -> Any:
    """A config option: its default, one line of help, and its allowed values. This one definition
    feeds the dataclass, the workflow's JSON schema (:func:`options_schema`), ``nmtlib train
    --set`` and the flags of ``nmtlib translate`` (:func:`check_option`)."""
    return field(default=default, metadata={"help": help, "range": range, "choices": choices})


RNN_CHOICES = ("lstm", "gru")


@dataclass(frozen=True)
class ModelConfig:
    arch: str = option("luong", "paper architecture preset the variant starts from", choices=tuple(ARCH_PRESETS))
    embedding_size: int = option(1000, "word embedding size", AT_LEAST_1)
    hidden_size: int = option(1000, "RNN hidden units per layer (and direction)", AT_LEAST_1)
    layers: int = option(4, "stacked RNN layers (encoder and decoder)", AT_LEAST_1)
    encoder_rnn: str = option("lstm", "encoder cell", choices=RNN_CHOICES)
    bidirectional: bool = option(False, "bidirectional encoder (Bahdanau §3.2)")
    decoder_rnn: str = option("lstm", "decoder cell", choices=RNN_CHOICES)
    reverse_source: bool = option(False, "feed the source reversed (Luong Table 1)")
    dropout: float = option(0.0, "dropout probability (Luong §4.1: 0.2)", Range(minimum=0, exclusive_maximum=1))
    attention: str = option("global", "attention mechanism", choices=("none", *ATTENTION_NAMES))
    score: str = option("general", "alignment score function (Luong Eq. 8–9, Bahdanau Eq. 7)", choices=SCORE_NAMES)
    query: str = option("current", "attend with h_t (current: Luong) or h_{t−1} (previous: Bahdanau, Shu)",
                        choices=("current", "previous"))
    input_feed: bool = option(True, "feed the attentional vector h̃_t to the next step (Luong §3.3)")
    output: str = option("attentional", "output layer before the softmax", choices=("attentional", "maxout", "fc"))
    output_size: int | None = option(None, "maxout units l (Bahdanau: 500) or fc units (Shu: 600)", AT_LEAST_1)
    bridge: str = option("final", "decoder initial state", choices=("final", "backward-tanh", "zero"))
    window: int = option(10, "D of local attention (window 2D+1)", AT_LEAST_1)
    max_positions: int = option(100, "L_max of the location score", AT_LEAST_1)
    sigma: float = option(1.5, "σ of Flexible Attention", POSITIVE)
    attention_size: int | None = option(None, "inner size of concat/additive scores (default: hidden)", AT_LEAST_1)


@dataclass(frozen=True)
class TrainConfig:
    preset: str = option("luong", "paper training recipe the options start from", choices=tuple(TRAIN_PRESETS))
    optimizer: str = option("sgd", "optimiser", choices=("sgd", "adam"))
    lr: float = option(1.0, "learning rate", POSITIVE)
    epochs: int = option(10, "training epochs", AT_LEAST_1)
    decay_start: int = option(6, "first epoch (1-based) trained with a decayed rate; decays every epoch after",
                              AT_LEAST_1)
    decay_factor: float = option(0.5, "learning-rate factor per decayed epoch", Range(exclusive_minimum=0, maximum=1))
    batch_size: int = option(128, "sentence pairs per update", AT_LEAST_1)
    clip: float = option(5.0, "rescale the gradient when its norm exceeds this", POSITIVE)
    init_range: float | None = option(0.1, "uniform init in [−r, r]; null keeps PyTorch's defaults", POSITIVE)
    max_len: int = option(50, "training pairs with a side longer than this are skipped", AT_LEAST_1)
    loss_norm: str = option("sentences", "loss normalisation: sum / batch size (Luong) or per token",
                            choices=("sentences", "tokens"))
    checkpoint_every: int = option(500, "updates between checkpoints (and one at every epoch end)", AT_LEAST_1)
    eval_every: int = option(0, "updates between dev perplexity evaluations (0: only at epoch ends)", AT_LEAST_0)
    patience: int = option(0, "stop once this many evaluations in a row improve dev perplexity by less than "
                              "min_improvement (0: off)", AT_LEAST_0)
    min_improvement: float = option(0.02, "relative dev-perplexity gain over the best so far that counts as "
                                          "improving", Range(minimum=0, exclusive_maximum=1))
    beta: float = option(0.0, "Flexible Attention fine-tuning weight, J − β·mean_t g(t) (Shu Eq. 9)", AT_LEAST_0)
    max_steps: int = option(0, "stop after this many updates (0: run all epochs); for smoke tests", AT_LEAST_0)
    bf16: bool = option(False, "bf16 autocast: on CUDA, or on a CPU that computes bf16 natively (AVX512-BF16, AMX); "
                                     "weights, optimiser state and loss stay float32 (nmtlib.precision)")
    cuda_graphs: bool = option(False, "replay the decoder loop as CUDA graphs (CUDA only; see nmtlib.train.graphs)")
    device: str = option("auto", "device to train on", choices=("auto", "cpu", "cuda"))
    keep_checkpoints: bool = option(False, "keep checkpoints/ (the resume state) once training ends; by default "
                                           "the finished model folder keeps model.pt as its only copy of the weights")


@dataclass(frozen=True)
class DecodeConfig:
    #: at most 1000: a step holds beam × batch × vocabulary scores (beam 100000 took 7.5 GB and
    #: minutes per sentence on CPU, with nothing to show for it; published searches stay below 100)
    beam: int = option(12, "beam size (1: greedy; at most 1000)", Range(minimum=1, maximum=1000))
    max_len_ratio: float = option(2.0, "stop a translation at ratio × source length + 10 words", POSITIVE)
    length_norm: bool = option(False, "rank finished hypotheses by log-probability / length")
    batch_size: int = option(64, "sentences decoded together", AT_LEAST_1)
    unk_replace: bool = option(True, "replace each <unk> by its most-attended source word (Luong §4.1)")
    taus: tuple[float, ...] = option((), "Flexible Attention thresholds τ to decode with, besides τ = ∞ "
                                         "(Shu Eq. 6)", TAU)
    cuda_graphs: bool = option(False, "replay beam-search steps as CUDA graphs (CUDA only; see nmtlib.decode.graphs)")
    tf32: bool = option(False, "float32 matrix products in TF32 on CUDA (see nmtlib.decode.translate.matmul_precision)")
    in_flight: int = option(1, "batches decoded at once on CUDA, their steps interleaved (see "
                               "nmtlib.decode.interleave)", AT_LEAST_1)
    #: Five times the papers' training limit of 50 words (Luong et al. 2015 §4.1, ``data.max_len``):
    #: far past what the models saw in training, and a search whose attention fits in memory
    max_src_len: int = option(250, "source tokens decoded per line: a longer line is translated from its first "
                                   "max_src_len, with a warning and \"truncated_from\" in its .jsonl record",
                              AT_LEAST_1)


#: keys of a variant that are not model options; ``seeds`` is read by the workflow
#: (:func:`nmtlib.workflow_config.variant_seeds`), never by training
VARIANT_META_KEYS = ("train", "decode", "finetune_from", "description", "paper_row", "seeds")
#: keys that label a variant for reports and do not change what is trained
LABEL_KEYS = ("description", "paper_row")
#: train options that decide what happens to files, not the weights: left out of the checkpoint
#: fingerprint (:meth:`VariantConfig.training_dict`), so that setting one resumes a checkpoint
UNTRAINED_OPTIONS = ("keep_checkpoints",)


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
        """What determines a trained model: checkpoints are keyed by it (:func:`trained_options`)."""
        return trained_options(self.to_dict())


def trained_options(variant: dict[str, Any]) -> dict[str, Any]:
    """Of a resolved variant as a dict (:meth:`VariantConfig.to_dict`, or as a model's ``env.json``
    records it), what determines the trained weights: no report labels, no decoding options
    (decoding never changes weights) and no :data:`UNTRAINED_OPTIONS`."""
    trained = {k: v for k, v in variant.items() if k not in (*LABEL_KEYS, "decode")}
    if "train" in trained:
        trained["train"] = {k: v for k, v in trained["train"].items() if k not in UNTRAINED_OPTIONS}
    return trained


def _fields(cls: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,), "float": (int, float), "bool": (bool,), "str": (str,), "None": (type(None),),
}
_JSON_TYPES = {"int": "integer", "float": "number", "bool": "boolean", "str": "string", "None": "null"}


def _type_names(f: dataclasses.Field) -> list[str]:
    """``int | None`` → ``['int', 'None']`` (annotations are strings: ``from __future__ import annotations``)."""
    return [a.strip() for a in str(f.type).split("|")]


def check_option(cls: type, key: str, value: Any, where: str) -> Any:
    """Check one option of ``ModelConfig``/``TrainConfig``/``DecodeConfig`` against its
    definition (type, choices, range) and return it in the dataclass's form.

    :raises ConfigError: ``<where>: <why>``, e.g. ``--set max_steps=-1: must be at least 0, got -1``.
    """
    known = _fields(cls)
    if key not in known:
        raise ConfigError(f"{where}: unknown option {key!r}; valid options: {sorted(known)}")
    f = known[key]
    if str(f.type).startswith("tuple"):
        if not isinstance(value, (list, tuple)) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            raise ConfigError(f"{where}: expected a list of numbers, got {value!r} ({type(value).__name__})")
        items = tuple(float(v) for v in value)
        for item in items:
            _check_range(f, item, where)
        return items
    names = _type_names(f)
    allowed = tuple(t for n in names for t in _TYPES.get(n, (object,)))
    if not isinstance(value, allowed) or (isinstance(value, bool) and "bool" not in names):
        hint = ""
        if isinstance(value, str) and "float" in names and is_number(value):
            hint = f"; {yaml_number_hint(value)}"
        raise ConfigError(f"{where}: expected {' or '.join(names)}, got {value!r} ({type(value).__name__}){hint}")
    choices = f.metadata.get("choices")
    if choices is not None and value not in choices:
        raise ConfigError(f"{where}: {value!r} is not one of {list(choices)}")
    if value is not None and not isinstance(value, (bool, str)):
        _check_range(f, value, where)
    return value


def is_number(text: str) -> bool:
    """Whether ``text`` reads as a finite number (YAML 1.1 keeps `1e-4` a string)."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _check_range(f: dataclasses.Field, value: float, where: str) -> None:
    why = f.metadata["range"].violation(value) if f.metadata.get("range") else (
        None if not isinstance(value, float) or math.isfinite(value) else f"must be a finite number, got {value}")
    if why:
        raise ConfigError(f"{where}: {why}")


def option_choices(cls: type, key: str) -> tuple[str, ...]:
    """The closed set of values of a string option (the registry the schema's enum shows)."""
    return _fields(cls)[key].metadata["choices"]


def options_schema(cls: type) -> dict[str, dict[str, Any]]:
    """JSON-schema ``properties`` of a config dataclass, from the one definition of each option;
    ``workflow_config`` puts them into ``workflow/schemas/config.schema.yaml``."""
    properties: dict[str, dict[str, Any]] = {}
    for f in dataclasses.fields(cls):
        meta = f.metadata
        prop: dict[str, Any]
        if meta.get("choices") is not None:
            prop = {"enum": list(meta["choices"])}
        elif str(f.type).startswith("tuple"):
            prop = {"type": "array", "items": {"type": "number", **(meta["range"].schema() if meta.get("range") else {})}}
        else:
            types = [_JSON_TYPES[n] for n in _type_names(f)]
            prop = {"type": types[0] if len(types) == 1 else types}
            if meta.get("range"):
                prop.update(meta["range"].schema())
        prop["description"] = meta["help"]
        properties[f.name] = prop
    return properties


def argparse_type(cls: type, key: str):
    """An argparse ``type=`` for a numeric option: parses the text and applies the option's range,
    so ``--beam 0`` is ``argument --beam: must be at least 1, got 0``."""
    import argparse

    kind = int if _type_names(_fields(cls)[key])[0] == "int" else float
    one_of_list = str(_fields(cls)[key].type).startswith("tuple")  # --tau gives one of ``taus``

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, "
                                             f"got {text!r}") from None
        try:
            if one_of_list:
                return check_option(cls, key, [value], "value")[0]
            return check_option(cls, key, value, "value")
        except ConfigError as err:
            raise argparse.ArgumentTypeError(str(err).removeprefix("value: ")) from None

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def option_help(cls: type, key: str, default_from: str | None = None) -> str:
    """An option's help for a command-line flag, with its default; ``default_from``: where the
    default comes from when there is one (``nmtlib translate``: the experiment's settings)."""
    f = _fields(cls)[key]
    default = ("on" if f.default else "off") if isinstance(f.default, bool) else f.default
    return f"{f.metadata['help']} (default: {default_from + ', else ' if default_from else ''}{default})"


def _build(cls: type, values: dict[str, Any], where: str) -> Any:
    _unknown_options(cls, values, where)
    return cls(**{key: check_option(cls, key, value, f"{where}.{key}") for key, value in values.items()})


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
    raw.pop("seeds", None)  # how many models to train, not what one model is

    model_raw = dict(raw)
    if finetune_from is not None:
        if not variants or finetune_from not in variants:
            raise ConfigError(
                f"{where}.finetune_from: {finetune_from!r} is not a variant of this experiment"
                f"{did_you_mean(finetune_from, variants or {})}; variants: {sorted(variants or {})}"
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
    decode = _build(DecodeConfig, {**(decode_defaults or {}), **decode_raw}, f"{where}.decode")
    # a training or decoding option that belongs to a mechanism is an error only where it is in
    # effect (β = 0 and no τ are every mechanism's defaults, and may come from the defaults)
    for section, cfg in (("train", train), ("decode", decode)):
        for f in dataclasses.fields(cfg):
            if getattr(cfg, f.name) != f.default:
                _check_owner(f"{section}.{f.name}", model.attention, where)
    _check_taus(decode.taus, f"{where}.decode.taus")
    return VariantConfig(name, model, train, decode, finetune_from, description, paper_row)


def owner_error(key: str, attention: str) -> str | None:
    """Why ``key`` (``window``, ``train.beta``, ``decode.taus``, …) cannot be set on a model with
    ``attention``: it belongs to other mechanisms (:func:`nmtlib.registry.option_owners`); None
    when it belongs to ``attention`` or to none. The one check of a variant's options and of
    ``nmtlib translate --tau``."""
    owners = option_owners().get(key)
    if not owners or attention in owners:
        return None
    section, _, name = key.rpartition(".")
    cls = {"": ModelConfig, "train": TrainConfig, "decode": DecodeConfig}[section]
    return (f"{key} ({_fields(cls)[name].metadata['help']}) belongs to attention "
            f"{' / '.join(repr(o) for o in owners)}, not {attention!r}")


def _check_owner(key: str, attention: str, where: str) -> None:
    """``key`` is set: fail unless it belongs to ``attention`` or to no mechanism (:func:`owner_error`)."""
    if (why := owner_error(key, attention)) is not None:
        raise ConfigError(f"{where}.{why}")


def _check_model(m: ModelConfig, given: dict[str, Any], where: str) -> None:
    """Reject combinations that have no meaning, with the reason."""

    def fail(key: str, why: str) -> None:
        raise ConfigError(f"{where}.{key}: {why}")

    if m.attention == "none":
        for key in (*option_owners(), "max_positions", "attention_size"):
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
        for key in given:
            _check_owner(key, m.attention, where)
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


def closest(key: Any, allowed: Any) -> str | None:
    """The name in ``allowed`` that ``key`` is most probably a misspelling of
    (:func:`difflib.get_close_matches`), or ``None`` when none is close."""
    import difflib

    matches = difflib.get_close_matches(str(key), [str(a) for a in allowed], n=1)
    return matches[0] if matches else None


def did_you_mean(key: Any, allowed: Any) -> str:
    """`` (did you mean 'tokenizer'?)`` for a misspelt ``key``, or ``""`` when nothing is close."""
    match = closest(key, allowed)
    return f" (did you mean {match!r}?)" if match else ""


def _unknown_options(cls: type, values: dict[str, Any], where: str) -> None:
    """Fail on the first key of ``values`` that is not an option of ``cls``, suggesting the
    option it is probably a misspelling of."""
    known = _fields(cls)
    for key in values:
        if key not in known:
            raise ConfigError(f"{where}: unknown option {key!r}{did_you_mean(key, known)}; "
                              f"valid options: {sorted(known)}")


#: the vocabulary's special symbols (<pad>, <unk>, <bos>, <eos>) on top of its top-K words
_SPECIALS = 4


def estimate_parameters(m: ModelConfig, src_vocab: int, tgt_vocab: int) -> int:
    """The number of parameters of the model :func:`nmtlib.models.builder.build_model` makes
    from ``m`` with vocabularies of ``src_vocab`` and ``tgt_vocab`` words (plus the special
    symbols), without torch: embeddings, the encoder's and decoder's RNN layers, the bridge, the
    attention score, the output layer and the softmax. The attention mechanisms' small extras
    (local-p's position predictor, Flexible Attention's gate) are left out, so it is a slight
    underestimate for those."""
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
    score = 0
    if attention:
        inner = m.attention_size or H
        score = {"general": memory * H, "concat": (H + memory + 1) * inner, "additive": (H + memory + 1) * inner,
                 "location": (H + 1) * m.max_positions}.get(m.score, 0)
    bridge = (H + 1) * H if m.bridge == "backward-tanh" else 0
    vs, vt = src_vocab + _SPECIALS, tgt_vocab + _SPECIALS
    return ((vs + vt) * E + rnn(m.encoder_rnn, E, m.layers, dirs) + rnn(m.decoder_rnn, decoder_input, m.layers, 1)
            + bridge + score + output + (out_size + 1) * vt)


def yaml_number_hint(text: str) -> str:
    """What to say of a number that YAML 1.1 read as the string ``text`` (``1e-4``): why, and
    how to write it (:func:`yaml_float`)."""
    spelling = yaml_float(text)
    if spelling is None or spelling == text.strip():
        # YAML 1.1 reads this spelling as a number: the string came from quotes (YAML's "0.1",
        # JSON's "0.1" in --set), not from the spelling
        return f"{text!r} is quoted, so it is a string: write {text.strip()} without quotes"
    return f"YAML 1.1 reads {text} as a string (a number needs a dot and a signed exponent): write {spelling}"


def yaml_float(text: str) -> str | None:
    """How to write the number ``text`` so that YAML 1.1 (PyYAML, Snakemake) reads a number: a
    dot in the mantissa and a sign in the exponent (``1e-4`` → ``1.0e-4``, ``5E3`` → ``5.0e+3``);
    ``None`` when ``text`` is not in exponent form."""
    m = re.fullmatch(r"([-+]?)(\d*)(?:\.(\d*))?[eE]([-+]?)(\d+)", text.strip())
    if m is None or not (m.group(2) or m.group(3)):
        return None
    sign, whole, frac, exp_sign, exp = m.groups()
    return f"{sign}{whole or '0'}.{frac or '0'}e{exp_sign or '+'}{exp}"
