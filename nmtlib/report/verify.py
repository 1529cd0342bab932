"""Whether a run reproduces another: its test translations against the other's, line for line.

A reference-results page (``nmtlib publish``) publishes every test translation of its run in
``docs/results/<experiment>/translations/``, laid out as a results folder's. The same config trained
again on the same kind of processor gives the same weights (docs/demo.md, *Reproducibility*), hence
the same translations and every number the page prints. So the translations are what to compare:
equal text is the whole check, and where text differs it says which model and how many sentences,
where comparing scores would only say that a number moved. Either side may be a page's folder or a
results folder (``results/<experiment>``): each reads its test reference from beside its translations
(``reference.txt``, a page's) or from its data (``data/test.tgt``), and the two references must be
the same text, or the runs did not translate the same test set.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nmtlib.errors import NmtlibError
from nmtlib.files import read_lines
from nmtlib.layout import RAW_TEXT, REPLACED_TEXT, TEST, Layout
from nmtlib.metrics.bleu import tokenized_bleu
from nmtlib.report.publish import REFERENCE

#: the published texts of a translation: as decoded, and after unknown-word replacement
TEXTS = {RAW_TEXT: "as decoded", REPLACED_TEXT: "after unknown-word replacement"}


@dataclass(frozen=True)
class FileCheck:
    """One translation of the expected run against the same translation of the run checked."""

    variant: str
    run: str  #: seed<k> or ensemble
    setting: str  #: beam<K>, beam<K>.tau<τ>
    text: str  #: :data:`TEXTS`' words
    sentences: int  #: lines of the expected translation
    differing: int | None  #: sentences whose text differs (None: the run checked has no such file)
    bleu: float | None = None  #: tokenized BLEU of the run checked, where it differs
    expected_bleu: float | None = None  #: the expected translation's, where it differs


def reference(folder: Path) -> Path:
    """The test reference of a page's folder (beside its translations) or of a results folder."""
    layout = Layout(folder)
    published = layout.translations_dir() / REFERENCE
    return published if published.exists() else layout.data(TEST, "tgt")


def verify(checked: Path, expected: Path) -> list[FileCheck]:
    """Every translation of ``expected`` (a page's folder or a results folder) against the same file
    of ``checked``, in path order.

    :raises NmtlibError: a side has no test reference, the references differ (naming the first line
        that does), or ``expected`` has no translation."""
    refs = {}
    for folder in (expected, checked):
        path = reference(folder)
        if not path.exists():
            raise NmtlibError(f"{folder}: no test reference ({path}): not a results folder or a published page's")
        refs[folder] = (path, read_lines(path))
    (exp_path, exp_ref), (path, ref) = refs[expected], refs[checked]
    if ref != exp_ref:
        line = next((i for i, (a, b) in enumerate(zip(ref, exp_ref)) if a != b), min(len(ref), len(exp_ref)))
        raise NmtlibError(f"{path} and {exp_path} differ at line {line + 1} ({len(ref)} and {len(exp_ref)} lines): "
                          "the two runs did not translate the same test set, or not with the same tokenization")
    ours, theirs = Layout(checked), Layout(expected)
    found = sorted(theirs.translations_dir().glob(f"*/*/{TEST}.*{RAW_TEXT}"))
    if not found:
        raise NmtlibError(f"{theirs.translations_dir()}: no translation to check against")
    checks = []
    for file in found:
        suffix = REPLACED_TEXT if file.name.endswith(REPLACED_TEXT) else RAW_TEXT
        setting = file.name.removeprefix(f"{TEST}.").removesuffix(suffix)
        variant, run = file.parent.parent.name, file.parent.name
        want = read_lines(file)
        mine = ours.translation(variant, run, setting, suffix)
        if not mine.exists():
            checks.append(FileCheck(variant, run, setting, TEXTS[suffix], len(want), None))
            continue
        got = read_lines(mine)
        differing = sum(a != b for a, b in zip(got, want)) + abs(len(got) - len(want))
        scores = ((tokenized_bleu(got, ref).score, tokenized_bleu(want, ref).score)
                  if differing and len(got) == len(ref) == len(want) else (None, None))
        checks.append(FileCheck(variant, run, setting, TEXTS[suffix], len(want), differing, *scores))
    return checks
