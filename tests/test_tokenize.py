"""Tokenizers: Moses fixtures line for line, the name table, Japanese segmentation."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from nmtlib.errors import NmtlibError
from nmtlib.data.tokenize import TOKENIZERS, available_tokenizers, get_tokenizer

from conftest import SHARED

FIXTURES = SHARED / "fixtures"
needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared fixtures not available")


def _lines(path: Path) -> list[str]:
    # split on "\n" only: str.splitlines would also split on U+2028 etc. inside news text
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _match_report(got: list[str], expected: list[str]) -> tuple[float, str]:
    """Match rate and a readable list of the mismatching lines (1-based)."""
    assert len(got) == len(expected), f"{len(got)} lines produced, {len(expected)} expected"
    bad = [(i + 1, g, e) for i, (g, e) in enumerate(zip(got, expected, strict=True)) if g != e]
    rate = 1 - len(bad) / len(expected)
    detail = "\n".join(
        f"  line {n}:\n    got      {g!r}\n    expected {e!r}" for n, g, e in bad[:20]
    )
    return rate, f"match rate {len(expected) - len(bad)}/{len(expected)} = {rate:.2%}\n{detail}"


# (fixture, raw input, expected output, tokenizer name, language, escape)
MOSES_CASES = [
    ("de-no-escape", "bleu-ribes-de/ref.txt", "bleu-ribes-de/ref.tok.txt", "moses", "de", False),
    (
        "de-escaped",
        "bleu-ribes-de/ref.txt",
        "bleu-ribes-de/ref.tok.escaped.txt",
        "moses",
        "de",
        True,
    ),
    ("en-no-escape", "tokenize-en/raw.txt", "tokenize-en/tok.txt", "moses", "en", False),
    ("en-escaped", "tokenize-en/raw.txt", "tokenize-en/tok.escaped.txt", "moses", "en", True),
    (
        "en-escaped-aggressive",
        "tokenize-en/raw.txt",
        "tokenize-en/tok.escaped.aggressive.txt",
        "moses-aggressive",
        "en",
        None,
    ),  # None: the default, which is to escape like tokenizer.perl
]


@needs_fixtures
@pytest.mark.parametrize(
    "raw, expected, name, lang, escape",
    [c[1:] for c in MOSES_CASES],
    ids=[c[0] for c in MOSES_CASES],
)
def test_moses_matches_tokenizer_perl_fixtures(
    raw: str, expected: str, name: str, lang: str, escape: bool | None
) -> None:
    tok = get_tokenizer(name, lang, escape=escape)
    got = [tok.tokenize(line) for line in _lines(FIXTURES / raw)]
    rate, report = _match_report(got, _lines(FIXTURES / expected))
    assert rate == 1.0, report


@needs_fixtures
def test_moses_detokenize_mostly_inverts_tokenize() -> None:
    # detokenizer.perl is not an exact inverse (e.g. "Sulzbachweg/Kirchstrasse" comes back as
    # "Sulzbachweg / Kirchstrasse"); this pins how close the round trip is on real news text
    raw = _lines(FIXTURES / "tokenize-en" / "raw.txt")
    for escape in (True, False):
        tok = get_tokenizer("moses", "en", escape=escape)
        back = [tok.detokenize(tok.tokenize(line)) for line in raw]
        rate, report = _match_report(back, raw)
        assert rate >= 0.97, report


def test_moses_escape_option_and_detokenize() -> None:
    escaped = get_tokenizer("moses", "en")
    assert escaped.escape is True
    assert escaped.tokenize('Tom & "Jerry"') == "Tom &amp; &quot; Jerry &quot;"
    assert escaped.detokenize("Tom &amp; &quot; Jerry &quot;") == 'Tom & "Jerry"'
    plain = get_tokenizer("moses", "en", escape=False)
    assert plain.tokenize('Tom & "Jerry"') == 'Tom & " Jerry "'
    aggressive = get_tokenizer("moses-aggressive", "en")
    assert aggressive.tokenize("a well-known fact") == "a well @-@ known fact"
    assert aggressive.detokenize("a well @-@ known fact") == "a well-known fact"


def test_none_tokenizer_only_normalizes_whitespace() -> None:
    tok = get_tokenizer("none", "ja")
    assert tok.escape is False
    assert tok.tokenize("  私 は  学生 です 。 \t") == "私 は 学生 です 。"
    assert tok.tokenize("don 't & <x>") == "don 't & <x>"  # already-tokenized text stays as is
    assert get_tokenizer("space", "en").tokenize("a  b") == "a b"
    assert get_tokenizer("none", "en", escape=True).tokenize("a & b") == "a &amp; b"
    assert get_tokenizer("none", "en", escape=True).detokenize("a &amp; b") == "a & b"


def test_japanese_segmentation_with_unidic_lite() -> None:
    tok = get_tokenizer("ja", "ja")
    assert tok.tokenize("私は東京大学で自然言語処理を研究しています。") == (
        "私 は 東京 大学 で 自然 言語 処理 を 研究 し て い ます 。"
    )
    # MeCab returns the ideographic space as a token; it must not become a "word"
    assert tok.tokenize("東京へ\u3000行く") == "東京 へ 行く"
    assert tok.tokenize("") == ""
    # the dictionary is the pip-installed unidic-lite, never the downloading "unidic" package
    info = tok.tagger.dictionary_info[0]["filename"]  # type: ignore[attr-defined]
    assert "unidic_lite" in info
    assert tok.detokenize("東京 へ 行く iPhone 5 を 買う") == "東京へ行くiPhone 5を買う"


def test_registry_names_and_errors() -> None:
    assert available_tokenizers() == sorted(TOKENIZERS)
    assert {"none", "moses", "moses-aggressive", "ja"} <= set(available_tokenizers())
    with pytest.raises(NmtlibError, match="unknown tokenizer 'kytea'; valid names: ja, moses"):
        get_tokenizer("kytea", "ja")
    with pytest.raises(NmtlibError, match="unknown option"):
        get_tokenizer("moses", "en", aggressive=True)
    with pytest.raises(NmtlibError, match="escape must be true/false"):
        get_tokenizer("moses", "en", escape="yes")


@pytest.mark.parametrize("name", available_tokenizers())
def test_tokenizers_pickle_for_worker_processes(name: str) -> None:
    tok = get_tokenizer(name, "ja" if name == "ja" else "de")
    line = "Die Anlage ist 100 Meter entfernt." if name != "ja" else "東京へ行く。"
    expected = tok.tokenize(line)  # after first use, so a lazily built MeCab tagger exists
    clone = pickle.loads(pickle.dumps(tok))
    assert clone.tokenize(line) == expected
