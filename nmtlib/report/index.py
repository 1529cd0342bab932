"""The findings of several published experiments side by side: the index of the reference-results
pages (``docs/results.md``) and a page's section beside other experiments.

A reader of several experiments asks first whether a claim holds on every corpus and direction.
Every publish (:func:`nmtlib.report.publish.results_page`) rewrites the index beside its folder
(:func:`results_index`): each page's best variant and verdicts counted, then the papers' claims across
the pages, one column per page. A page named with ``--beside`` sets its findings beside this one's
(:func:`beside_section`). Everything is read from the CSVs the pages keep beside them
(:func:`published_table`) or from an experiment's results folder (:func:`findings_of`); a claim goes
by its one name across experiments (:func:`nmtlib.report.findings.claim_name`), whatever its wording
in one direction.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from nmtlib.atomic import atomic_write
from nmtlib.files import read_lines
from nmtlib.layout import Layout
from nmtlib.report.findings import claim_name, counts
from nmtlib.report.seeds import ONE_SEED_REACH, pooled_spread, seeds_cell
from nmtlib.report.significance import NO_VERDICT, UNTESTED, VERDICTS
from nmtlib.report.tables import MISSING
from nmtlib.words import and_list, counted

#: the test BLEU the pages and the index show: as the tables score it (tokenized, before unknown-word
#: replacement), read through the metric registry
PAGE_BLEU = "bleu_before_unk_replace"


def _signed(value: object, percent: bool = False) -> str:
    if value is None or pd.isna(value):
        return MISSING
    return f"{float(value):+.2f}" + ("%" if percent else "")


def finding_cells(r: pd.Series) -> dict[str, str]:
    """A findings row as the page shows it: paper | ours | 95% interval | seeds | verdict (window
    claims in percent)."""
    percent = "%" in str(r["metric"])
    interval = (MISSING if pd.isna(r["ci_low"]) else
                f"[{_signed(r['ci_low'], percent)}, {_signed(r['ci_high'], percent)}]")
    return {"paper": _signed(r["paper_diff"], percent), "ours": _signed(r["ours_diff"], percent),
            "95% interval": interval, "seeds": seeds_cell(r), "verdict": r["verdict"]}


def published_table(folder: Path, name: str) -> Path:
    """A table as a published page keeps it: ``docs/results/<experiment>/<name>.csv``."""
    return folder / f"{name}.csv"


def findings_of(folder: Path) -> Path:
    """Another experiment's findings for ``--beside``: its results folder's
    (``results/<experiment>/tables/findings.csv``) or, where only the page is at hand (a results
    folder is not committed), its published page's copy (``docs/results/<experiment>/findings.csv``)."""
    results, page = Layout(folder).table("findings"), published_table(folder, "findings")
    for path in (results, page):
        if path.exists():
            return path
    raise FileNotFoundError(f"{results} does not exist, nor a published page's {page.name} in {folder}: run that "
                            f"experiment's report first, or name its page's folder (--beside {folder})")


#: a findings row's two sides as ``compared`` names them: "A: <name>[ (<setting>)] vs B: <name>[ (<setting>)]…"
_COMPARED = re.compile(r"^A: (?P<a>\S+)(?: \([^)]*\))? vs B: (?P<b>\S+)(?: \([^)]*\))?(?:;|$)")


def read_findings(folder: Path) -> pd.DataFrame:
    """Another experiment's findings (:func:`findings_of`). A page published before the findings counted
    each side's models (no ``runs_a`` / ``runs_b``) takes them from the summary published beside it:
    the runs of the variant or ensemble each side of ``compared`` names (a side decoded at another τ is
    the same models); a side it does not find stays unknown."""
    path = findings_of(folder)
    findings = pd.read_csv(path)
    summary = path.with_name("summary.csv")
    if {"runs_a", "runs_b"} <= set(findings.columns) or "compared" not in findings.columns or not summary.exists():
        return findings
    runs = {str(v): int(r) for v, r in pd.read_csv(summary)[["variant", "runs"]].itertuples(index=False)
            if not pd.isna(r)}
    sides = findings["compared"].map(lambda c: _COMPARED.match(c) if isinstance(c, str) else None)
    for side in ("a", "b"):
        findings[f"runs_{side}"] = [runs.get(m[side]) if m else None for m in sides]
    return findings


def _tested_claims(findings: Iterable[pd.DataFrame]) -> list[str]:
    """Every claim that one of ``findings`` tests, by its name across experiments (:func:`claim_name`), in order."""
    return list(dict.fromkeys(claim_name(c) for df in findings for c in df.loc[df["verdict"] != UNTESTED, "claim"]))


def _claim_cells(findings: pd.DataFrame, name: str) -> dict[str, str] | None:
    """The page cells (:func:`finding_cells`) of the claim that goes by ``name`` across experiments,
    whatever its wording in ``findings``; None where ``findings`` does not test it."""
    found = findings[findings["claim"].map(claim_name) == name]
    if found.empty or found.iloc[0]["verdict"] == UNTESTED:
        return None
    return finding_cells(found.iloc[0])


def beside_section(experiments: dict[str, pd.DataFrame]) -> list[str]:
    """The findings of several experiments side by side (this one first): every claim that one of
    them tests, one row per experiment, each with its own paper difference (a claim's paper number
    follows the experiment's direction, and so may its wording: the row goes by the claim's one name,
    :func:`nmtlib.report.findings.claim_name`), ours, the interval and the verdict; before the table,
    the claims whose verdict changes from one experiment to another (:func:`verdicts_compared`)."""
    names = list(experiments)
    claims = _tested_claims(experiments.values())
    rows, verdicts = [], {}
    for claim in claims:
        for i, name in enumerate(names):
            cells = (_claim_cells(experiments[name], claim)
                     or {"paper": MISSING, "ours": MISSING, "95% interval": MISSING, "seeds": MISSING,
                         "verdict": UNTESTED})
            rows.append({"claim": claim if i == 0 else "", "experiment": name, **cells})
            verdicts.setdefault(claim, {})[name] = cells["verdict"]
    quoted = [f"`{n}`" for n in names]
    lines = [f"## Beside {and_list(quoted[1:])}", "",
             f"Every claim that {and_list(quoted, 'or')} tests, one row per "
             "experiment, each from that experiment's own findings (its paper difference is the paper's number "
             "for that experiment's direction).", ""]
    if sentence := verdicts_compared(verdicts):
        lines += [sentence, ""]
    if rows:
        lines += [pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True), ""]
    else:
        lines += ["None of them tests a claim yet.", ""]
    return lines


def verdicts_compared(verdicts: dict[str, dict[str, str]]) -> str:
    """Which claims change verdict from one experiment to another, in a sentence: ``verdicts`` is
    ``{claim: {experiment: verdict}}``; a claim counts where at least two experiments test it (a
    verdict other than not tested, and a smoke run's no verdict). Empty where no claim is tested twice."""
    changed, same = [], 0
    for claim, by in verdicts.items():
        tested = {name: v for name, v in by.items() if v not in (UNTESTED, NO_VERDICT)}
        if len(tested) < 2:
            continue
        if len(set(tested.values())) == 1:
            same += 1
            continue
        grouped = {v: [f"`{n}`" for n, w in tested.items() if w == v] for v in dict.fromkeys(tested.values())}
        changed.append(f"*{claim}* ({'; '.join(f'{v} on {and_list(ns)}' for v, ns in grouped.items())})")
    if not changed and not same:
        return ""
    parts = []
    if changed:
        parts.append(f"The verdict changes with the experiment for {counted(len(changed), 'claim')}: "
                     f"{'; '.join(changed)}.")
    if same and changed:
        parts.append(f"The other {'claim' if same == 1 else f'{same} claims'} tested by more than one experiment "
                     f"{'keeps its' if same == 1 else 'keep their'} verdict.")
    elif same:
        parts.append(f"Every claim tested by more than one experiment keeps its verdict ({counted(same, 'claim')}).")
    return " ".join(parts)


def results_index(folder: Path) -> Path:
    """Write ``<folder>.md`` beside ``folder`` (outside it: every page in it publishes its translations):
    every page published in ``folder`` (a ``<stem>.md`` with its
    ``<stem>/summary.csv`` and ``<stem>/findings.csv``) in one table, then the papers' claims across
    them, one column per page, after the claims whose verdict changes from page to page
    (:func:`verdicts_compared`): what a reader of several experiments asks first (does a claim hold on
    every corpus and direction?). Everything is read from the pages' own CSVs and titles."""
    pages = {}
    for page in sorted(folder.glob("*.md"), key=lambda p: p.stem):
        summary, findings = (published_table(folder / page.stem, name) for name in ("summary", "findings"))
        if summary.exists() and findings.exists():
            title = next((line[2:].strip() for line in read_lines(page) if line.startswith("# ")), page.stem)
            pages[page.stem] = (title, pd.read_csv(summary), read_findings(folder / page.stem))
    shown = [v for v in VERDICTS if v != NO_VERDICT or any(counts(f)[v] for _, _, f in pages.values())]
    lines = ["# Reference results", "",
             f"Every page in `{folder.parent.name}/{folder.name}/` is one experiment, trained and published with `nmtlib publish`; this index "
             "is written from the pages' own tables each time one is published. A page says how its models were "
             "trained, on what machine, at which commits, and gives every test translation, against which "
             f"`nmtlib verify --results {Layout.of('<exp>').root} --against {folder.parent.name}/{folder.name}/<exp>` "
             "checks a rerun, line for line.", ""]
    if not pages:
        return _write_index(folder, [*lines, "No page is published yet."])
    rows = []
    for stem, (title, summary, findings) in pages.items():
        single = summary[summary["attention"].astype(str) != "ensemble"]
        runs = pd.to_numeric(single["runs"], errors="coerce").fillna(0)
        ensembles = summary[(summary["attention"].astype(str) == "ensemble") &
                            (pd.to_numeric(summary["runs"], errors="coerce").fillna(0) > 0)]
        bleu = pd.to_numeric(single[PAGE_BLEU], errors="coerce")
        best = "" if bleu.isna().all() else _best_variant(single.loc[bleu.idxmax()])
        c = counts(findings)
        rows.append({"page": f"[{title}]({folder.name}/{stem}.md)",
                     "variants with results": f"{int((runs > 0).sum())} of {len(single)}"
                                              + (f", {counted(len(ensembles), 'ensemble')}"
                                                 if len(ensembles) else ""),
                     "models scored": str(int(runs.sum())), "best variant (test BLEU)": best,
                     "seed to seed (BLEU sd)": _seed_spread_cell(summary),
                     f"claims: {' / '.join(shown)}": " / ".join(str(c[v]) for v in shown)})
    lines += [pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True), "",
              "*Best variant*: the highest mean test BLEU over a variant's seeds (tokenized, before unknown-word "
              "replacement, τ = ∞), ± the standard deviation over them. *Seed to seed*: how far one model's test "
              "BLEU moves when it is trained again with another seed, the standard deviation pooled over the "
              "page's variants with several seeds, with its degrees of freedom (a dash: one seed throughout); a "
              f"verdict of a side of one seed takes it in, and a difference under about {ONE_SEED_REACH:.1f} times it "
              "needs more than one seed a side.", ""]
    claims = _tested_claims(f for _, _, f in pages.values())
    lines += ["## The papers' claims across experiments", ""]
    if not claims:
        return _write_index(folder, [*lines, "No page tests a claim yet."])
    matrix, verdicts = [], {}
    for claim in claims:
        row = {"claim": claim}
        for stem, (_, _, findings) in pages.items():
            cells = _claim_cells(findings, claim)
            verdicts.setdefault(claim, {})[stem] = UNTESTED if cells is None else cells["verdict"]
            row[stem] = (UNTESTED if cells is None else
                         f"{cells['verdict']}: {cells['ours']} {cells['95% interval']}".replace(f" {MISSING}", ""))
        matrix.append(row)
    lines += ["Each claim that some page tests, and each page's verdict with our difference A − B and its 95% "
              "interval (window claims in percent). The rows compared, the paper's own difference for that page's "
              "direction and why a claim is not tested are on each page.", ""]
    if sentence := verdicts_compared(verdicts):
        lines += [sentence, ""]
    lines += [pd.DataFrame(matrix).to_markdown(index=False, disable_numparse=True)]
    return _write_index(folder, lines)


def _seed_spread_cell(summary: pd.DataFrame) -> str:
    """The page's pooled seed spread of BLEU (:func:`nmtlib.report.seeds.pooled_spread`), "sd (df df)"."""
    spread = pooled_spread(summary)
    return MISSING if spread is None else f"{spread.sd:.2f} ({spread.df:g} df)"


def _best_variant(row: pd.Series) -> str:
    bleu, sd, runs = row[PAGE_BLEU], row.get(f"{PAGE_BLEU}_sd"), int(float(row["runs"]))
    spread = f" ± {float(sd):.2f}" if sd is not None and not pd.isna(sd) else ""
    return f"{row['variant']}: {float(bleu):.2f}{spread} ({counted(runs, 'seed')})"


def _write_index(folder: Path, lines: list[str]) -> Path:
    path = folder.with_name(f"{folder.name}.md")
    with atomic_write(path) as f:
        f.write("\n".join(lines).rstrip() + "\n")
    return path
