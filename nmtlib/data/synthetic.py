"""An embedded, seeded parallel corpus of two artificial languages (no download needed).

The workflow's default run trains on this corpus so that it works offline and in minutes on
a laptop. Both languages and the corpus are generated from one integer seed: the same seed
and sizes give byte-identical files, a different seed gives different word forms and
different sentences.

Lexicons
    Each language has ~1.6K made-up, pronounceable word forms (the source language with
    consonant clusters and closed syllables, the target with open, Japanese-like syllables;
    the two sets are disjoint). Open-class words (nouns, verbs, adjectives, adverbs) are
    drawn with Zipf-like frequencies ``1 / (rank + 2)`` (rank from 1), and shorter forms go
    to frequent ranks. The translation is a fixed bilingual lexicon, mostly one-to-one;
    about 8% of nouns and 12% of verbs (and one preposition) translate to *two* target words
    (stem + classifier / light verb, the second drawn from a small set).

Grammar (source SVO, head-initial; target SOV, head-final)::

    source clause:  SUBJ [aux] [not] VERB [OBJ] PP* [ADV]
    target clause:  SUBJ nom [ADV] PP'* [OBJ acc] VERB [neg] [aux]
    source NP:      [article | demonstrative] ADJ* [NOUN] NOUN [of NP] [RELATIVE]  (or a pronoun)
    target NP:      [demonstrative] [NOUN] NOUN ADJ* [gen NP] [RELATIVE]
    source PP:      PREP NP                  target PP': NP POSTP
    relative:       that [not] VERB [OBJ]  ->  rel [OBJ acc] VERB [neg]
    sentence:       GROUP (COORD GROUP)*   with GROUP = CLAUSE | CLAUSE SUB CLAUSE,
                    coordination keeps the clause order, ``C1 SUB C2`` becomes ``C2' SUB' C1'``

So words translate monotonically *inside* phrases (a compound noun, a run of adjectives, a
genitive attribute, a PP's object NP, a run of PPs, coordinated clauses) while the phrases
are *reordered across*: the verb moves to the clause end, the adverb to after the subject,
prepositions become postpositions, adjectives follow their noun, a subordinate clause is
fronted. An attention model must therefore both track the source locally (follow a monotone
run) and jump (to the verb, back to the object, to the next clause); an encoder-decoder
without attention has to carry all of that through one vector and degrades on the long,
multi-clause sentences. Every choice is made on the source side and the translation is a
function of the source sentence, so a perfect model reaches BLEU 100.

Null and one-to-many correspondences make the alignment non-trivial: source articles have no
target counterpart, target case markers (``nom``/``acc``) have no source counterpart, and
the one-to-many lexicon entries align one source word to two target words.

Gold alignments (``dev.align``, ``test.align``) use the format of
``data/alignments/*.gold``: one line per sentence pair, space-separated 1-based links
``i-j`` (Sure) and ``ipj`` (Possible), ``i`` indexing the source and ``j`` the target. A
translation (content or function word, one-to-one or one-to-many) gives Sure links; an
article is Possible-linked to its noun's translation and a case marker to its noun (or
pronoun), since those correspondences are genuinely debatable.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmtlib.atomic import write_lines

__all__ = [
    "DEFAULT_SIZES",
    "MAX_LEN",
    "MIN_LEN",
    "SentencePair",
    "SyntheticLanguagePair",
    "generate_corpus",
    "write_corpus",
]

#: sentences per split of the default corpus
DEFAULT_SIZES: dict[str, int] = {"train": 20000, "dev": 500, "test": 500}
#: bounds on the number of tokens of a source *and* of a target sentence
MIN_LEN, MAX_LEN = 3, 50

# Sizes of the word classes (source side; the target has the same classes plus case markers).
_OPEN_CLASS_SIZES: dict[str, int] = {"noun": 900, "verb": 320, "adj": 260, "adv": 80}
_CLOSED_CLASS_SIZES: dict[str, int] = {
    "art": 2,  # articles: dropped in the target (unaligned source words)
    "dem": 2,  # demonstratives: translated, stay before the noun
    "pron": 6,
    "prep": 12,  # -> postpositions
    "coord": 3,  # coordinating conjunctions: clause order kept
    "sub": 3,  # subordinating conjunctions: clause order swapped
    "rel": 1,  # relative pronoun -> relative marker
    "gen": 1,  # genitive preposition -> genitive marker
    "neg": 1,
    "aux": 2,  # tense auxiliaries -> verb suffix words
}
_TRANSITIVE_FRACTION = 0.6  # of verbs (a lexical property, so translation stays deterministic)
_MULTI_FRACTION = {"noun": 0.08, "verb": 0.12}  # one-to-many lexicon entries
_N_CLASSIFIERS, _N_LIGHT_VERBS = 6, 2  # second target words of the one-to-many entries
_ZIPF_OFFSET = 2.0  # weight of rank r (0-based) is 1 / (r + 1 + offset)

# Phonotactics: (onsets, nuclei, codas); "-" is an empty onset or coda.
_SRC_SOUNDS = (
    ("p t k b d g m n l r s f v st pr tr kl gr br pl sk dr fl".split()),
    ("a e i o u a e o ai ou".split()),
    ("- - - n r s t l m k nd rt st".split()),
)
_TGT_SOUNDS = (
    ("- h k m n r s t w y z ch sh ts j g b p".split()),
    ("a i u e o a i o aa ii uu ei".split()),
    ("- - - - - n".split()),
)

_Tok = tuple[str, int, bool]  # (word, anchor id of the phrase head it belongs to, is_translation)
_Phrase = tuple[list[_Tok], list[_Tok]]  # (source tokens, target tokens)


@dataclass(frozen=True)
class SentencePair:
    """One sentence pair with its gold alignment (links are 0-based ``(src, tgt)`` pairs)."""

    src: tuple[str, ...]
    tgt: tuple[str, ...]
    sure: tuple[tuple[int, int], ...]
    possible: tuple[tuple[int, int], ...]

    def alignment_line(self) -> str:
        """The links in the gold format: ``i-j`` Sure, ``ipj`` Possible, 1-based, sorted."""
        links = [(i, j, "-") for i, j in self.sure] + [(i, j, "p") for i, j in self.possible]
        return " ".join(f"{i + 1}{sep}{j + 1}" for i, j, sep in sorted(links))

    def is_monotone(self) -> bool:
        """Whether the Sure links keep the word order (Kendall tau of 1, up to ties)."""
        js = [j for _, j in sorted(self.sure)]
        return all(a <= b for a, b in zip(js, js[1:]))


def _make_forms(
    rng: random.Random,
    sounds: tuple[list[str], list[str], list[str]],
    n: int,
    syllables: Sequence[int],
    weights: Sequence[float],
    taken: set[str],
) -> list[str]:
    """``n`` new distinct word forms (not in ``taken``, which is updated), shortest first."""
    onsets, nuclei, codas = sounds
    forms: list[str] = []
    while len(forms) < n:
        k = rng.choices(syllables, weights)[0]
        parts: list[str] = []
        for s in range(k):
            parts.append(rng.choice(onsets) + rng.choice(nuclei))
            if s == k - 1 or rng.random() < 0.25:  # codas mostly word-finally
                parts.append(rng.choice(codas))
        form = "".join(parts).replace("-", "")
        if len(form) >= 2 and form not in taken:
            taken.add(form)
            forms.append(form)
    # Zipf's law of abbreviation: frequent ranks get the shorter forms (stable sort)
    return sorted(forms, key=len)


def _cumulative_zipf(n: int) -> list[float]:
    return list(itertools.accumulate(1.0 / (r + 1 + _ZIPF_OFFSET) for r in range(n)))


class SyntheticLanguagePair:
    """The two languages and the bilingual lexicon of one seed; ``sample`` draws sentence pairs.

    Attributes: ``classes`` maps a word class to its source words (open classes by
    frequency rank), ``translation`` maps every translatable source word to its target
    word(s), ``transitive`` is the set of transitive verbs, ``case_markers`` the target-only
    words, ``unaligned_src`` the source-only words (articles).
    """

    def __init__(self, seed: int) -> None:
        rng = random.Random(f"nmtlib-synthetic-lexicon-{seed}")
        taken: set[str] = set()
        self.classes: dict[str, tuple[str, ...]] = {}
        self.translation: dict[str, tuple[str, ...]] = {}

        # closed classes: short (1-syllable) forms; source first, then the target's
        n_closed = sum(_CLOSED_CLASS_SIZES.values())
        src_closed = _make_forms(rng, _SRC_SOUNDS, n_closed, [1], [1.0], taken)
        tgt_closed = _make_forms(rng, _TGT_SOUNDS, n_closed + 2 + _N_CLASSIFIERS + _N_LIGHT_VERBS,
                                 [1], [1.0], taken)
        rng.shuffle(src_closed)
        rng.shuffle(tgt_closed)
        self.case_markers: tuple[str, str] = (tgt_closed.pop(), tgt_closed.pop())  # (nom, acc)
        classifiers = [tgt_closed.pop() for _ in range(_N_CLASSIFIERS)]
        light_verbs = [tgt_closed.pop() for _ in range(_N_LIGHT_VERBS)]
        for cls, size in _CLOSED_CLASS_SIZES.items():
            words = tuple(src_closed.pop() for _ in range(size))
            self.classes[cls] = words
            if cls != "art":
                for w in words:
                    self.translation[w] = (tgt_closed.pop(),)
        # one preposition becomes a two-word postposition (one-to-many)
        first_prep = self.classes["prep"][0]
        self.translation[first_prep] += (classifiers[0],)
        self.unaligned_src: tuple[str, ...] = self.classes["art"]

        # open classes: 1-3 syllables (source), 2-4 (target); short forms to frequent ranks
        for cls, size in _OPEN_CLASS_SIZES.items():
            src = _make_forms(rng, _SRC_SOUNDS, size, [1, 2, 3], [1.0, 4.0, 2.0], taken)
            tgt = _make_forms(rng, _TGT_SOUNDS, size, [2, 3, 4], [3.0, 4.0, 1.0], taken)
            self.classes[cls] = tuple(src)
            # the frequency ranks of translations roughly agree (a little jitter), as in
            # real bitexts; shuffle within windows of 8 ranks
            order = list(range(size))
            for start in range(0, size, 8):
                window = order[start:start + 8]
                rng.shuffle(window)
                order[start:start + 8] = window
            extra = {"noun": classifiers, "verb": light_verbs}.get(cls)
            for s, t in zip(src, (tgt[i] for i in order)):
                if extra and rng.random() < _MULTI_FRACTION[cls]:
                    self.translation[s] = (t, rng.choice(extra))
                else:
                    self.translation[s] = (t,)
        verbs = self.classes["verb"]
        self.transitive: frozenset[str] = frozenset(
            v for v in verbs if rng.random() < _TRANSITIVE_FRACTION
        )
        self._cum: dict[str, list[float]] = {
            cls: _cumulative_zipf(len(words)) for cls, words in self.classes.items()
        }

    # ---- vocabularies ----------------------------------------------------------------------

    @property
    def src_vocab(self) -> tuple[str, ...]:
        """All source word forms, sorted."""
        return tuple(sorted(w for words in self.classes.values() for w in words))

    @property
    def tgt_vocab(self) -> tuple[str, ...]:
        """All target word forms that can occur, sorted."""
        words = {t for ts in self.translation.values() for t in ts}
        return tuple(sorted(words | set(self.case_markers)))

    def lexicon_lines(self) -> list[str]:
        """``source TAB target words`` lines of the bilingual lexicon, sorted by source word."""
        return [f"{s}\t{' '.join(t)}" for s, t in sorted(self.translation.items())]

    # ---- sampling --------------------------------------------------------------------------

    def sample(self, rng: random.Random) -> SentencePair:
        """A sentence pair whose source and target have ``MIN_LEN``..``MAX_LEN`` tokens."""
        while True:
            src, tgt = _SentenceBuilder(self, rng).sentence()
            if MIN_LEN <= len(src) <= MAX_LEN and MIN_LEN <= len(tgt) <= MAX_LEN:
                return _align(src, tgt)


class _SentenceBuilder:
    """Draws one sentence; every phrase returns its source and target tokens."""

    def __init__(self, lang: SyntheticLanguagePair, rng: random.Random) -> None:
        self.lang, self.rng, self._ids = lang, rng, itertools.count()

    def pick(self, cls: str) -> str:
        words, cum = self.lang.classes[cls], self.lang._cum[cls]
        i = bisect.bisect_right(cum, self.rng.random() * cum[-1])
        return words[min(i, len(words) - 1)]

    def word(self, cls: str, src_word: str | None = None) -> tuple[_Phrase, int]:
        """A translated word (Sure-aligned to its target word(s)) and its anchor id."""
        w = src_word if src_word is not None else self.pick(cls)
        a = next(self._ids)
        return ([(w, a, True)], [(t, a, True) for t in self.lang.translation[w]]), a

    def maybe(self, p: float, cls: str) -> _Phrase:
        return self.word(cls)[0] if self.rng.random() < p else ([], [])

    def np(self, case: int | None, depth: int) -> _Phrase:
        """Noun phrase; ``case`` 0/1 appends the target nom/acc marker, None for PP objects."""
        r = self.rng.random
        if r() < 0.15:
            (src, tgt), head = self.word("pron")
        else:
            det = r()
            adjs = [self.word("adj")[0] for _ in range(self.rng.choices((0, 1, 2), (60, 32, 8))[0])]
            (ns, nt), head = self.word("noun")
            src, tgt = [], []
            if det < 0.5:  # article: no target counterpart, Possible-linked to the noun
                src.append((self.pick("art"), head, False))
            elif det < 0.65:  # demonstrative: translated, stays before the noun
                ds, dt = self.word("dem")[0]
                src += ds
                tgt += dt
            if r() < 0.12:  # compound noun: modifier + head, same order in both languages
                (ms, mt), _ = self.word("noun")
                ns, nt = ms + ns, mt + nt
            src += [t for a in adjs for t in a[0]] + ns
            tgt += nt + [t for a in adjs for t in a[1]]
            if depth == 0 and r() < 0.1:  # genitive attribute "N of NP": kept in order
                (gs, gt), _ = self.word("gen")
                ps, pt = self.np(None, depth + 1)
                src += gs + ps
                tgt += gt + pt
            if depth == 0 and r() < 0.1:
                rs, rt = self.relative(depth + 1)
                src += rs
                tgt += rt
        if case is not None:  # case marker: no source counterpart, Possible-linked to the head
            tgt.append((self.lang.case_markers[case], head, False))
        return src, tgt

    def pp(self, depth: int) -> _Phrase:
        (ps, pt), _ = self.word("prep")
        ns, nt = self.np(None, depth)
        return ps + ns, nt + pt  # preposition -> postposition

    def verb(self) -> tuple[_Phrase, bool]:
        v = self.pick("verb")
        return self.word("verb", v)[0], v in self.lang.transitive

    def relative(self, depth: int) -> _Phrase:
        (rs, rt), _ = self.word("rel")
        ns, nt = self.maybe(0.1, "neg")
        (vs, vt), transitive = self.verb()
        os_, ot = self.np(1, depth) if transitive else ([], [])
        # no PP or adverb inside: one after the relative would be ambiguous (relative or main
        # clause?), and the translation must stay a function of the source sentence
        return rs + ns + vs + os_, rt + ot + vt + nt

    def clause(self, depth: int = 0) -> _Phrase:
        ss, st = self.np(0, depth)
        xs, xt = self.maybe(0.25, "aux")
        ns, nt = self.maybe(0.12, "neg")
        (vs, vt), transitive = self.verb()
        os_, ot = self.np(1, depth) if transitive else ([], [])
        ps, pt = [], []
        for _ in range(self.rng.choices((0, 1, 2), (58, 32, 10))[0]):
            s, t = self.pp(depth)
            ps += s
            pt += t
        as_, at = self.maybe(0.2, "adv")
        # SVO -> SOV: adverb after the subject, PPs before the object, verb + suffixes last
        return ss + xs + ns + vs + os_ + ps + as_, st + at + pt + ot + vt + nt + xt

    def group(self) -> _Phrase:
        if self.rng.random() < 0.2:  # C1 SUB C2 -> C2' SUB' C1' (subordinate clause fronted)
            s1, t1 = self.clause()
            (cs, ct), _ = self.word("sub")
            s2, t2 = self.clause()
            return s1 + cs + s2, t2 + ct + t1
        return self.clause()

    def sentence(self) -> _Phrase:
        src, tgt = self.group()
        for _ in range(self.rng.choices((0, 1, 2, 3), (70, 22, 6, 2))[0]):
            (cs, ct), _ = self.word("coord")
            s, t = self.group()
            src += cs + s
            tgt += ct + t
        return src, tgt


def _align(src: list[_Tok], tgt: list[_Tok]) -> SentencePair:
    """Links between tokens of the same anchor: Sure if both are translations, Possible if
    one is a function word without counterpart (article, case marker), none if both are."""
    by_anchor: dict[int, list[tuple[int, bool]]] = {}
    for j, (_, a, is_tr) in enumerate(tgt):
        by_anchor.setdefault(a, []).append((j, is_tr))
    sure: list[tuple[int, int]] = []
    possible: list[tuple[int, int]] = []
    for i, (_, a, s_tr) in enumerate(src):
        for j, t_tr in by_anchor.get(a, ()):
            if s_tr and t_tr:
                sure.append((i, j))
            elif s_tr or t_tr:
                possible.append((i, j))
    return SentencePair(
        tuple(w for w, _, _ in src), tuple(w for w, _, _ in tgt), tuple(sure), tuple(possible)
    )


def _check_sizes(sizes: Mapping[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for split, n in sizes.items():
        if not split or not split.replace("_", "").isalnum():
            raise ValueError(f"bad split name {split!r}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"size of split {split!r} must be a non-negative integer, got {n!r}")
        out[split] = n
    return out


def generate_corpus(
    seed: int = 1, sizes: Mapping[str, int] | None = None
) -> tuple[SyntheticLanguagePair, dict[str, list[SentencePair]]]:
    """The languages of ``seed`` and ``sizes[split]`` sentence pairs per split.

    Source sentences are unique across the whole corpus (a sentence is drawn again if it
    occurred in any earlier split or earlier in its own), so dev/test never copy train.
    """
    sizes = _check_sizes(DEFAULT_SIZES if sizes is None else sizes)
    lang = SyntheticLanguagePair(seed)
    rng = random.Random(f"nmtlib-synthetic-corpus-{seed}")
    seen: set[tuple[str, ...]] = set()
    splits: dict[str, list[SentencePair]] = {}
    for split, n in sizes.items():
        pairs: list[SentencePair] = []
        misses = 0
        while len(pairs) < n:
            pair = lang.sample(rng)
            if pair.src in seen:
                misses += 1
                if misses > 100 * n + 10000:  # cannot happen at sane sizes; avoid a hang
                    raise ValueError(f"cannot draw {n} distinct sentences for split {split!r}")
                continue
            seen.add(pair.src)
            pairs.append(pair)
        splits[split] = pairs
    return lang, splits


def write_corpus(
    out_dir: str | Path, seed: int = 1, sizes: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """Write ``<split>.src``/``<split>.tgt`` for every split, ``<split>.align`` gold alignments
    for every split but ``train``, and ``lexicon.tsv``; return corpus statistics.

    ``sizes`` defaults to ``DEFAULT_SIZES`` (train 20000, dev 500, test 500).
    """
    lang, splits = generate_corpus(seed, sizes)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files: list[str] = []
    for split, pairs in splits.items():
        write_lines(out / f"{split}.src", [" ".join(p.src) for p in pairs])
        write_lines(out / f"{split}.tgt", [" ".join(p.tgt) for p in pairs])
        files += [f"{split}.src", f"{split}.tgt"]
        if split != "train":
            write_lines(out / f"{split}.align", [p.alignment_line() for p in pairs])
            files.append(f"{split}.align")
    write_lines(out / "lexicon.tsv", lang.lexicon_lines())
    files.append("lexicon.tsv")

    every = [p for pairs in splits.values() for p in pairs]
    n = max(len(every), 1)
    return {
        "seed": seed,
        "out_dir": str(out),
        "files": files,
        "sentences": {split: len(pairs) for split, pairs in splits.items()},
        "mean_len": {
            "src": round(sum(len(p.src) for p in every) / n, 2),
            "tgt": round(sum(len(p.tgt) for p in every) / n, 2),
        },
        "max_len": {
            "src": max((len(p.src) for p in every), default=0),
            "tgt": max((len(p.tgt) for p in every), default=0),
        },
        "vocab": {  # word types occurring in the written corpus
            "src": len({w for p in every for w in p.src}),
            "tgt": len({w for p in every for w in p.tgt}),
        },
        "lexicon": {"src": len(lang.src_vocab), "tgt": len(lang.tgt_vocab)},
        "reordered_fraction": round(sum(not p.is_monotone() for p in every) / n, 4),
    }
