"""Decoding settings as file names write them (``beam12``, ``beam12.tau1.2``), and the options
of one decoding run (:func:`run_settings`), which the workflow hands to ``nmtlib translate
--decode-json`` and :func:`check_run_settings` reads back."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from nmtlib.config.options import ConfigError, check_option
from nmtlib.config.variant import DecodeConfig

#: a decoding setting in file names (the workflow's wildcard constraint uses it too)
SETTING_PATTERN = r"beam(\d+)(?:\.tau([0-9.]+))?"


def setting_name(beam: int, tau: float | None = None) -> str:
    """A decoding setting as file names write it: ``beam<K>``, or ``beam<K>.tau<τ>`` (τ as ``%g``).
    :func:`parse_setting` reads it back; :func:`check_taus` makes sure every τ survives the trip."""
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


def check_taus(taus: tuple[float, ...], where: str) -> None:
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

