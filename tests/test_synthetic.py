"""The embedded synthetic parallel corpus (``nmtlib.data.synthetic``) and ``nmtlib corpus``."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nmtlib.data.synthetic import (
    MAX_LEN,
    MIN_LEN,
    SyntheticLanguagePair,
    generate_corpus,
    write_corpus,
)

SMALL = {"train": 300, "dev": 50, "test": 50}
FILES = [f"{s}.{e}" for s in SMALL for e in ("src", "tgt")]
FILES += ["dev.align", "test.align", "lexicon.tsv"]
LINK = re.compile(r"^(\d+)([-p])(\d+)$")


def _digests(d: Path) -> dict[str, str]:
    return {f: hashlib.sha256((d / f).read_bytes()).hexdigest() for f in FILES}


def _lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n") and "\r" not in text
    return text[:-1].split("\n")


def _parse_links(line: str) -> list[tuple[int, int, str]]:
    links = []
    for tok in line.split(" "):
        m = LINK.match(tok)
        assert m, f"bad link {tok!r} in {line!r}"
        links.append((int(m.group(1)), int(m.group(3)), "S" if m.group(2) == "-" else "P"))
    return links


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    d = tmp_path_factory.mktemp("syn")
    return d, write_corpus(d, seed=1, sizes=SMALL)


def test_same_seed_byte_identical(corpus: tuple[Path, dict], tmp_path: Path) -> None:
    d, stats = corpus
    again = write_corpus(tmp_path, seed=1, sizes=SMALL)
    assert _digests(d) == _digests(tmp_path)
    assert {k: v for k, v in again.items() if k != "out_dir"} == {
        k: v for k, v in stats.items() if k != "out_dir"
    }


def test_different_seed_differs(corpus: tuple[Path, dict], tmp_path: Path) -> None:
    d, _ = corpus
    write_corpus(tmp_path, seed=2, sizes=SMALL)
    a, b = _digests(d), _digests(tmp_path)
    assert all(a[f] != b[f] for f in FILES)
    # different word forms, not just different sentences
    assert set(SyntheticLanguagePair(1).src_vocab) != set(SyntheticLanguagePair(2).src_vocab)


def test_files_and_stats(corpus: tuple[Path, dict]) -> None:
    d, stats = corpus
    for split, n in SMALL.items():
        src, tgt = _lines(d / f"{split}.src"), _lines(d / f"{split}.tgt")
        assert len(src) == len(tgt) == n == stats["sentences"][split]
        for line in src + tgt:
            toks = line.split(" ")
            assert all(toks), f"empty token / double space in {line!r}"
            assert MIN_LEN <= len(toks) <= MAX_LEN
    assert not (d / "train.align").exists()
    lex = _lines(d / "lexicon.tsv")
    assert all(len(line.split("\t")) == 2 for line in lex)
    assert 1000 <= stats["lexicon"]["src"] <= 2000 and 1000 <= stats["lexicon"]["tgt"] <= 2000
    assert set(stats) >= {"sentences", "mean_len", "max_len", "vocab"}


def test_lexicons_disjoint_and_one_to_many() -> None:
    lang = SyntheticLanguagePair(1)
    assert not set(lang.src_vocab) & set(lang.tgt_vocab)
    n_multi = sum(len(t) > 1 for t in lang.translation.values())
    assert 0.03 * len(lang.translation) < n_multi < 0.2 * len(lang.translation)
    assert lang.unaligned_src and lang.case_markers
    assert not set(lang.unaligned_src) & set(lang.translation)


def test_alignments_in_bounds_and_content_words_sure(corpus: tuple[Path, dict]) -> None:
    d, _ = corpus
    lang = SyntheticLanguagePair(1)
    target_only = set(lang.case_markers)
    source_only = set(lang.unaligned_src)
    for split in ("dev", "test"):
        src, tgt = _lines(d / f"{split}.src"), _lines(d / f"{split}.tgt")
        aligns = _lines(d / f"{split}.align")
        assert len(aligns) == len(src)
        for s_line, t_line, a_line in zip(src, tgt, aligns):
            s, t = s_line.split(), t_line.split()
            links = _parse_links(a_line)
            assert len(set((i, j) for i, j, _ in links)) == len(links)
            assert all(1 <= i <= len(s) and 1 <= j <= len(t) for i, j, _ in links)
            sure_t = {j for _, j, kind in links if kind == "S"}
            sure_s = {i for i, _, kind in links if kind == "S"}
            for j, w in enumerate(t, 1):
                assert (j in sure_t) == (w not in target_only), (w, t_line, a_line)
            for i, w in enumerate(s, 1):
                assert (i in sure_s) == (w not in source_only), (w, s_line, a_line)
            # every Sure link is a lexicon translation
            for i, j, kind in links:
                if kind == "S":
                    assert t[j - 1] in lang.translation[s[i - 1]]
            # articles and case markers get Possible links only
            assert any(kind == "P" for *_, kind in links) == bool(
                source_only & set(s) or target_only & set(t)
            )


def test_reorders_globally_and_keeps_local_runs() -> None:
    _, splits = generate_corpus(seed=3, sizes={"dev": 200})
    pairs = splits["dev"]
    reordered = sum(not p.is_monotone() for p in pairs) / len(pairs)
    assert 0.3 < reordered < 1.0
    # local monotone runs: consecutive target words whose Sure-aligned source positions step
    # forward by 1 (or 2, over an article); at least 3 in a row in many sentences
    with_run = 0
    for p in pairs:
        src_of: dict[int, int] = {}
        for i, j in sorted(p.sure, key=lambda link: (link[1], link[0])):
            src_of.setdefault(j, i)
        js = sorted(src_of)
        best = cur = 1
        for a, b in zip(js, js[1:]):
            cur = cur + 1 if 1 <= src_of[b] - src_of[a] <= 2 else 1
            best = max(best, cur)
        with_run += best >= 3
    assert with_run / len(pairs) > 0.25


def test_no_dev_test_sentence_in_train(corpus: tuple[Path, dict]) -> None:
    d, _ = corpus
    train = set(_lines(d / "train.src"))
    dev, test = _lines(d / "dev.src"), _lines(d / "test.src")
    assert not train & set(dev) and not train & set(test) and not set(dev) & set(test)
    assert len(set(dev)) == len(dev) and len(set(test)) == len(test)


def test_default_stats_shape() -> None:
    _, splits = generate_corpus(seed=1, sizes={"train": 2000})
    lens = [len(p.src) for p in splits["train"]]
    mean = sum(lens) / len(lens)
    assert 10 <= mean <= 16
    assert max(lens) > 30 and min(lens) == MIN_LEN


def test_bad_sizes() -> None:
    with pytest.raises(ValueError):
        generate_corpus(1, {"train": -1})


def test_cli(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    cmd = [sys.executable, "-m", "nmtlib", "corpus", "synthetic", "--out", str(out),
           "--seed", "1", "--train", "300", "--dev", "50", "--test", "50"]
    # another hash seed than this process: set/dict hashing must not leak into the output
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    res = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    assert res.returncode == 0, res.stderr
    stats = json.loads(res.stdout.strip().splitlines()[-1])
    assert stats["sentences"] == SMALL
    assert all((out / f).is_file() for f in FILES)
    ref = tmp_path / "ref"
    write_corpus(ref, seed=1, sizes=SMALL)
    assert _digests(out) == _digests(ref)
    bad = subprocess.run(cmd[:-1] + ["-5"], capture_output=True, text=True, check=False)
    assert bad.returncode == 2
