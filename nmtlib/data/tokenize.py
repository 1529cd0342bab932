"""Word tokenizers for the corpora, behind one name table.

What: ``get_tokenizer(name, lang, **opts)`` returns an object with ``tokenize(line) -> str`` and
``detokenize(line) -> str`` (tokens are separated by single spaces). Names:

- ``none`` (alias ``space``): the corpus is already tokenized (small_parallel_enja, the synthetic
  corpus); only whitespace is normalized.
- ``moses``: Moses ``tokenizer.perl -l LANG`` through sacremoses (the Python port), which
  reproduces the Moses reference outputs in ``/work/shared/fixtures`` line for line.
- ``moses-aggressive``: the same with ``-a`` (hyphens split as ``@-@``), as in Luong et al. 2015.
- ``ja``: Japanese word segmentation with MeCab (fugashi) and the UniDic-lite dictionary.

Why: every corpus and every metric must use the same, named, reproducible segmentation; the
names are the only place the CLI choices come from, so CLI and library cannot drift.

``escape`` (Moses' XML escaping of ``& | < > ' " [ ]``) defaults to True for the Moses
tokenizers, like ``tokenizer.perl``, and to False for ``none``/``ja`` (already-tokenized
references must stay byte-identical); any tokenizer accepts ``escape=True/False`` explicitly.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, Protocol

from nmtlib.errors import NmtlibError

__all__ = [
    "Tokenizer",
    "NoneTokenizer",
    "MosesTokenizer",
    "JapaneseTokenizer",
    "TOKENIZERS",
    "available_tokenizers",
    "get_tokenizer",
]


class Tokenizer(Protocol):
    """What every tokenizer offers: one line in, one line out, tokens joined by single spaces."""

    name: str
    lang: str
    escape: bool

    def tokenize(self, line: str) -> str: ...

    def detokenize(self, line: str) -> str: ...


def _moses_escape(text: str) -> str:
    """Moses' XML escaping with sacremoses' own table, so every tokenizer escapes alike."""
    from sacremoses import MosesTokenizer as _Moses

    for regexp, substitution in _Moses.MOSES_ESCAPE_XML_REGEXES:
        text = regexp.sub(substitution, text)
    return text


def _moses_unescape(text: str) -> str:
    """The inverse, with sacremoses' detokenizer table (``&amp;`` last, like detokenizer.perl)."""
    from sacremoses import MosesDetokenizer

    for regexp, substitution in MosesDetokenizer.MOSES_UNESCAPE_XML_REGEXES:
        text = regexp.sub(substitution, text)
    return text


class NoneTokenizer:
    """For corpora that are already tokenized: collapse runs of whitespace, nothing else."""

    def __init__(self, lang: str, escape: bool = False, name: str = "none") -> None:
        self.name = name
        self.lang = lang
        self.escape = escape

    def tokenize(self, line: str) -> str:
        text = " ".join(line.split())
        return _moses_escape(text) if self.escape else text

    def detokenize(self, line: str) -> str:
        text = " ".join(line.split())
        return _moses_unescape(text) if self.escape else text


class MosesTokenizer:
    """Moses ``tokenizer.perl -l LANG [-a] [-no-escape]`` / ``detokenizer.perl`` via sacremoses.

    sacremoses is configured exactly like the Perl defaults (no protected patterns, language
    specific non-breaking prefixes; languages without a prefix file fall back to English, as
    ``tokenizer.perl`` does), which is what makes the fixture outputs match line for line.
    """

    def __init__(
        self, lang: str, escape: bool = True, aggressive: bool = False, name: str = "moses"
    ) -> None:
        from sacremoses import MosesDetokenizer
        from sacremoses import MosesTokenizer as _Moses

        self.name = name
        self.lang = lang
        self.escape = escape
        self.aggressive = aggressive
        self._tok = _Moses(lang=lang)
        self._detok = MosesDetokenizer(lang=lang)

    def tokenize(self, line: str) -> str:
        return self._tok.tokenize(
            line, escape=self.escape, aggressive_dash_splits=self.aggressive, return_str=True
        )

    def detokenize(self, line: str) -> str:
        # detokenizer.perl also undoes "@-@", so one detokenizer serves both variants
        return self._detok.detokenize(line.split(), unescape=self.escape)


#: ASCII letters/digits: where a space between two Japanese-segmented tokens was real text
_ASCII_ALNUM = re.compile(r"[A-Za-z0-9]")


class JapaneseTokenizer:
    """Japanese segmentation with MeCab (fugashi) and UniDic-lite, the offline stand-in for KyTea.

    WAT segments Japanese with KyTea, but KyTea's PyPI wheel ships no model and the model is a
    separate download, so it cannot run offline; MeCab + UniDic-lite is pip-installable and
    deterministic. The dictionary is selected explicitly from the ``unidic_lite`` package: the
    full ``unidic`` package (which fugashi would otherwise prefer) downloads itself at run time.
    """

    def __init__(self, lang: str = "ja", escape: bool = False, name: str = "ja") -> None:
        self.name = name
        self.lang = lang
        self.escape = escape
        self._tagger: Any = None  # built lazily: MeCab taggers cannot be pickled to workers

    @property
    def tagger(self) -> Any:
        if self._tagger is None:
            try:
                import fugashi
                import unidic_lite
            except ImportError as err:
                raise NmtlibError(
                    f"tokenizer 'ja' needs fugashi and unidic-lite ({err}); "
                    "pip install fugashi unidic-lite"
                ) from err
            dicdir = unidic_lite.DICDIR
            rc = os.path.join(dicdir, "mecabrc")
            self._tagger = fugashi.Tagger(f'-r "{rc}" -d "{dicdir}"')
        return self._tagger

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_tagger"] = None
        return state

    def tokenize(self, line: str) -> str:
        # MeCab drops ASCII spaces but returns an ideographic space (U+3000) as a token: drop it
        words = (w.surface for w in self.tagger(line))
        text = " ".join(w for w in words if w and not w.isspace())
        return _moses_escape(text) if self.escape else text

    def detokenize(self, line: str) -> str:
        # Japanese has no spaces; keep one only between two ASCII alphanumerics ("iPhone 5")
        tokens = line.split()
        out: list[str] = []
        for tok in tokens:
            if out and _ASCII_ALNUM.match(out[-1][-1]) and _ASCII_ALNUM.match(tok[0]):
                out.append(" ")
            out.append(tok)
        text = "".join(out)
        return _moses_unescape(text) if self.escape else text


#: the one name table: name -> factory(lang, escape), where escape None = the tokenizer's default
TOKENIZERS: dict[str, Callable[[str, bool | None], Tokenizer]] = {
    "none": lambda lang, escape: NoneTokenizer(lang, bool(escape), name="none"),
    "space": lambda lang, escape: NoneTokenizer(lang, bool(escape), name="space"),
    "moses": lambda lang, escape: MosesTokenizer(
        lang, True if escape is None else escape, aggressive=False, name="moses"
    ),
    "moses-aggressive": lambda lang, escape: MosesTokenizer(
        lang, True if escape is None else escape, aggressive=True, name="moses-aggressive"
    ),
    "ja": lambda lang, escape: JapaneseTokenizer(lang, bool(escape), name="ja"),
}


def available_tokenizers() -> list[str]:
    """The valid tokenizer names, for CLI choices, schema enums and error messages."""
    return sorted(TOKENIZERS)


def get_tokenizer(name: str, lang: str, **opts: Any) -> Tokenizer:
    """Build the tokenizer ``name`` for language ``lang``.

    :param opts: only ``escape: bool | None`` (None: the tokenizer's default). Unknown options
        are an error rather than silently ignored.
    """
    if name not in TOKENIZERS:
        raise NmtlibError(
            f"unknown tokenizer {name!r}; valid names: {', '.join(available_tokenizers())}"
        )
    unknown = sorted(set(opts) - {"escape"})
    if unknown:
        raise NmtlibError(
            f"tokenizer {name!r}: unknown option(s) {', '.join(unknown)}; valid options: escape"
        )
    escape = opts.get("escape")
    if escape is not None and not isinstance(escape, bool):
        raise NmtlibError(f"tokenizer {name!r}: option escape must be true/false, got {escape!r}")
    if not lang:
        raise NmtlibError(f"tokenizer {name!r}: a language code is required")
    return TOKENIZERS[name](lang, escape)
