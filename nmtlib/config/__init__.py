"""Variant configuration: named presets from the papers, overrides, and semantic validation.

A *variant* is a named dict of model options plus optional ``train`` and ``decode`` sub-dicts.
``arch`` picks a paper's architecture preset (``luong``, ``rnnsearch``, ``shu``) and
``train.preset`` a paper's training recipe (``luong``, ``shu``); every other key overrides a
preset field. The JSON schema (``workflow/schemas/config.schema.yaml``) checks types and names;
:func:`resolve_variant` checks what a schema cannot — combinations that make no sense — and
says why.

One module per concern; this package re-exports their public names, so that
``from nmtlib.config import X`` is the way in:

- :mod:`~nmtlib.config.options`: :func:`option`, the one declaration of an option, and what reads
  it (the check, the JSON schema, argparse types and help);
- :mod:`~nmtlib.config.presets`: the papers' architecture and training presets;
- :mod:`~nmtlib.config.variant`: the model, training and decoding dataclasses and the resolved variant;
- :mod:`~nmtlib.config.resolve`: a variant's YAML dict resolved and checked;
- :mod:`~nmtlib.config.settings`: decoding settings in file names and the options of one decoding run;
- :mod:`~nmtlib.config.hints`: "did you mean" and YAML 1.1's spelling of exponents;
- :mod:`~nmtlib.config.size`: a model's parameter count without torch.
"""

from nmtlib.config.hints import closest, did_you_mean, is_number, yaml_float, yaml_number_hint
from nmtlib.config.options import (AT_LEAST_0, AT_LEAST_1, POSITIVE, TAU, ConfigError, Range, argparse_type,
                                   check_option, option, option_choices, option_help, options_schema)
from nmtlib.config.presets import ARCH_PRESETS, TRAIN_PRESETS
from nmtlib.config.resolve import owner_error, resolve_variant
from nmtlib.config.settings import SETTING_PATTERN, check_run_settings, parse_setting, run_settings, setting_name
from nmtlib.config.size import estimate_parameters
from nmtlib.config.variant import (LABEL_KEYS, RNN_CHOICES, UNTRAINED_OPTIONS, VARIANT_META_KEYS, DecodeConfig,
                                   ModelConfig, TrainConfig, VariantConfig, trained_options)

__all__ = [
    "AT_LEAST_0", "AT_LEAST_1", "ARCH_PRESETS", "LABEL_KEYS", "POSITIVE", "RNN_CHOICES", "SETTING_PATTERN", "TAU",
    "TRAIN_PRESETS", "UNTRAINED_OPTIONS", "VARIANT_META_KEYS", "ConfigError", "DecodeConfig", "ModelConfig", "Range",
    "TrainConfig", "VariantConfig", "argparse_type", "check_option", "check_run_settings", "closest", "did_you_mean",
    "estimate_parameters", "is_number", "option", "option_choices", "option_help", "options_schema", "owner_error",
    "parse_setting", "resolve_variant", "run_settings", "setting_name", "trained_options", "yaml_float",
    "yaml_number_hint",
]
