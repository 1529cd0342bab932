"""A variant's options: the model, its training and its decoding, one dataclass each, every field
declared once with :func:`~nmtlib.config.options.option` (default, help, range or choices), and
the resolved variant (:class:`VariantConfig`) that :func:`nmtlib.config.resolve.resolve_variant` makes."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from nmtlib.config.options import AT_LEAST_0, AT_LEAST_1, POSITIVE, TAU, Range, option
from nmtlib.config.presets import ARCH_PRESETS, TRAIN_PRESETS
from nmtlib.registry import ATTENTION_NAMES, SCORE_NAMES

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
