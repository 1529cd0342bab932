"""One declaration of each option, and everything that reads it.

:func:`option` declares a field of the config dataclasses (:mod:`nmtlib.config.variant`): its
default, one line of help, its range (:class:`Range`) or closed set of values. From it come the
workflow's JSON schema (:func:`options_schema`), the check of a value wherever it comes in
(:func:`check_option`: a config, ``nmtlib train --set``, ``nmtlib translate --decode-json``), the
command line's parsers (:func:`argparse_type`) and help (:func:`option_help`, :func:`option_choices`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from nmtlib.config.hints import did_you_mean, is_number, yaml_number_hint


class ConfigError(ValueError):
    """A configuration problem; the message names the key and the allowed values."""


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


def fields_of(cls: type) -> dict[str, dataclasses.Field]:
    """The options of a config dataclass by name."""
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
    known = fields_of(cls)
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


def _check_range(f: dataclasses.Field, value: float, where: str) -> None:
    why = f.metadata["range"].violation(value) if f.metadata.get("range") else (
        None if not isinstance(value, float) or math.isfinite(value) else f"must be a finite number, got {value}")
    if why:
        raise ConfigError(f"{where}: {why}")


def build(cls: type, values: dict[str, Any], where: str) -> Any:
    """An instance of config dataclass ``cls`` from ``values``, each checked (:func:`check_option`);
    an unknown key is an error that suggests the option it probably misspells."""
    known = fields_of(cls)
    for key in values:
        if key not in known:
            raise ConfigError(f"{where}: unknown option {key!r}{did_you_mean(key, known)}; "
                              f"valid options: {sorted(known)}")
    return cls(**{key: check_option(cls, key, value, f"{where}.{key}") for key, value in values.items()})


def option_choices(cls: type, key: str) -> tuple[str, ...]:
    """The closed set of values of a string option (the registry the schema's enum shows)."""
    return fields_of(cls)[key].metadata["choices"]


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

    kind = int if _type_names(fields_of(cls)[key])[0] == "int" else float
    one_of_list = str(fields_of(cls)[key].type).startswith("tuple")  # --tau gives one of ``taus``

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
    f = fields_of(cls)[key]
    default = ("on" if f.default else "off") if isinstance(f.default, bool) else f.default
    return f"{f.metadata['help']} (default: {default_from + ', else ' if default_from else ''}{default})"
