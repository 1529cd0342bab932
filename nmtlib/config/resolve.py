"""A variant's YAML dict resolved into a checked :class:`~nmtlib.config.variant.VariantConfig`:
the presets laid under it, every option checked against its declaration, and the combinations a
schema cannot reject (an option of another attention mechanism, a ``dot`` score between states of
different sizes, ...) rejected with the reason."""

from __future__ import annotations

import dataclasses
from typing import Any

from nmtlib.config.hints import did_you_mean
from nmtlib.config.options import ConfigError, build, fields_of
from nmtlib.config.presets import ARCH_PRESETS, TRAIN_PRESETS
from nmtlib.config.settings import check_taus
from nmtlib.config.variant import VARIANT_META_KEYS, DecodeConfig, ModelConfig, TrainConfig, VariantConfig
from nmtlib.registry import option_owners


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
    model = build(ModelConfig, {**ARCH_PRESETS[arch], **model_raw}, where)
    _check_model(model, model_raw, where)

    merged_train = {**(train_defaults or {}), **train_raw}
    preset = merged_train.get("preset", "luong")
    if preset not in TRAIN_PRESETS:
        raise ConfigError(f"{where}.train.preset: {preset!r} is not one of {list(TRAIN_PRESETS)}")
    recipe = dict(TRAIN_PRESETS[preset])
    if preset == "luong" and model.dropout > 0:
        # Luong §4.1: with dropout, 12 epochs and halving after epoch 8
        recipe.update(epochs=12, decay_start=9)
    train = build(TrainConfig, {**recipe, **merged_train}, f"{where}.train")
    decode = build(DecodeConfig, {**(decode_defaults or {}), **decode_raw}, f"{where}.decode")
    # a training or decoding option that belongs to a mechanism is an error only where it is in
    # effect (β = 0 and no τ are every mechanism's defaults, and may come from the defaults)
    for section, cfg in (("train", train), ("decode", decode)):
        for f in dataclasses.fields(cfg):
            if getattr(cfg, f.name) != f.default:
                _check_owner(f"{section}.{f.name}", model.attention, where)
    check_taus(decode.taus, f"{where}.decode.taus")
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
    return (f"{key} ({fields_of(cls)[name].metadata['help']}) belongs to attention "
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
