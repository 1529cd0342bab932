"""Names of the building blocks, without importing torch.

The workflow validates configs when Snakemake parses the Snakefile — on every cluster job
too — so config checking must not pay for importing PyTorch. This module therefore declares each
attention mechanism as plain data: its name, the class that implements it (imported only when a
model is built) and the config options that belong to it. The model builder, the option checks
(:func:`nmtlib.config.resolve_variant`), the schema's enum, the CLI's choices and the report's
order all read :data:`MECHANISMS`; adding a mechanism is its class and one entry here
(docs/extending.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _no_parameters(cfg: Any) -> int:
    return 0


@dataclass(frozen=True)
class Mechanism:
    """One attention mechanism, declared once."""

    name: str  #: the value of ``model.attention`` in configs, and its label in results
    cls: str  #: ``module:Class`` of its :class:`~nmtlib.models.attention.Attention` subclass
    paper: str  #: where it is defined, for help texts and docs
    #: config keys that only this mechanism reads (and any other that declares them): model
    #: options by name (``window``), training and decoding options as ``train.<key>`` /
    #: ``decode.<key>``. A variant that sets one of them under another mechanism is an error.
    options: tuple[str, ...] = ()
    #: whether its output carries a strength g(t) that decoding thresholds (τ) and the β objective act
    #: on (the class's ``gated``; Shu & Nakayama's Flexible Attention). The report keys its τ sweeps,
    #: window figures and Shu's claims on this, not on a name.
    gated: bool = False
    #: the number of parameters the class adds to its score function, from the model's
    #: ``ModelConfig`` (plain arithmetic: :func:`nmtlib.config.estimate_parameters` counts a model
    #: without torch; tests/test_config_traps.py holds it to the built class)
    parameters: Callable[[Any], int] = _no_parameters

    def load(self) -> Any:
        """The implementing class (imports torch)."""
        module, _, name = self.cls.partition(":")
        return getattr(importlib.import_module(module), name)


_ATT = "nmtlib.models.attention"

#: attention mechanisms in the order results are shown (Luong §3.1–3.2, Shu & Nakayama §3);
#: ``none`` (a non-attentional model) is not a mechanism
MECHANISMS: tuple[Mechanism, ...] = (
    Mechanism("global", f"{_ATT}:GlobalAttention", "Luong et al. 2015 §3.1; Bahdanau et al. 2015 Eq. 5–6"),
    Mechanism("local-m", f"{_ATT}:LocalMonotonicAttention", "Luong et al. 2015 §3.2", options=("window",)),
    Mechanism("local-p", f"{_ATT}:LocalPredictiveAttention", "Luong et al. 2015 §3.2, Eq. 10–11",
              # W_p and v_p of Eq. 10
              options=("window",), parameters=lambda m: m.hidden_size * m.hidden_size + m.hidden_size),
    Mechanism("flexible", f"{_ATT}:FlexibleAttention", "Shu & Nakayama 2017 §3",
              options=("sigma", "train.beta", "decode.taus"), gated=True,
              # W_g, v_g and b_g of Eq. 8
              parameters=lambda m: (m.hidden_size + m.embedding_size) * m.hidden_size + m.hidden_size + 1),
)

ATTENTION_NAMES: tuple[str, ...] = tuple(m.name for m in MECHANISMS)

#: score functions (Luong Eq. 8–9, Bahdanau Eq. 7)
SCORE_NAMES: tuple[str, ...] = ("dot", "general", "concat", "additive", "location")


def mechanism(name: str) -> Mechanism:
    for m in MECHANISMS:
        if m.name == name:
            return m
    raise KeyError(f"unknown attention mechanism {name!r}; choose one of {list(ATTENTION_NAMES)}")


def is_gated(attention: str) -> bool:
    """Whether ``model.attention`` value ``attention`` names a :attr:`Mechanism.gated` mechanism
    (``none``, no attention, is not one)."""
    return any(m.name == attention and m.gated for m in MECHANISMS)


def option_owners() -> dict[str, tuple[str, ...]]:
    """``{config key: the mechanisms it belongs to}`` for every key a mechanism declares."""
    owners: dict[str, tuple[str, ...]] = {}
    for m in MECHANISMS:
        for key in m.options:
            owners[key] = (*owners.get(key, ()), m.name)
    return owners
