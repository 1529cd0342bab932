"""What an error says besides "wrong": the option a misspelt key probably meant, and how to write
a number that YAML 1.1 read as a string."""

from __future__ import annotations

import math
import re
from typing import Any


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


def is_number(text: str) -> bool:
    """Whether ``text`` reads as a finite number (YAML 1.1 keeps `1e-4` a string)."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


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
