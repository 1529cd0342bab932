"""``nmtlib compare``: two systems' translation files, the difference of a metric, its interval.

Expected values come from the reference tools run on the same files: sacreBLEU's own command line
(``--paired-bs``) for BLEU and its p-value, and ``nmtlib score ribes`` (RIBES.py 1.02.4's numbers,
tests/test_metrics_ribes.py) for RIBES. The interval itself is tested in tests/test_significance.py.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT


def write_corpus(folder: Path, keeps: dict[str, float], n: int = 80, seed: int = 3) -> dict[str, Path]:
    """A reference and one system per ``keeps`` entry, each keeping about that share of the words."""
    rng = random.Random(seed)
    refs = [" ".join(f"w{rng.randrange(30)}" for _ in range(rng.randrange(4, 14))) for _ in range(n)]
    files = {"ref": folder / "ref.txt"}
    files["ref"].write_text("\n".join(refs) + "\n", encoding="utf-8")
    for name, keep in keeps.items():
        files[name] = folder / f"{name}.txt"
        files[name].write_text("\n".join(" ".join(w if rng.random() < keep else "x" for w in r.split())
                                         for r in refs) + "\n", encoding="utf-8")
    return files


def compare(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nmtlib", "compare", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


def last_json(run: subprocess.CompletedProcess) -> dict:
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def sacrebleu_paired(ref: Path, baseline: Path, system: Path) -> tuple[float, float, float]:
    """sacreBLEU's command line: the baseline's BLEU, the system's, and the system's p-value."""
    run = subprocess.run([sys.executable, "-m", "sacrebleu", str(ref), "-i", str(baseline), str(system), "-m", "bleu",
                          "--paired-bs", "-tok", "none", "-s", "none", "--force", "--format", "json"],
                         capture_output=True, text=True, timeout=300, check=True)
    base, other = json.loads(run.stdout)
    return base["BLEU"]["score"], other["BLEU"]["score"], other["BLEU"]["p_value"]


def test_one_file_a_side_is_sacrebleus_paired_bootstrap(tmp_path: Path) -> None:
    files = write_corpus(tmp_path, {"a": 0.8, "b": 0.74})
    got = last_json(compare("--ref", files["ref"], "--a", files["a"], "--b", files["b"]))
    b, a, p = sacrebleu_paired(files["ref"], files["b"], files["a"])
    assert got["a"] == pytest.approx(a, abs=1e-3) and got["b"] == pytest.approx(b, abs=1e-3)
    assert got["difference"] == pytest.approx(a - b, abs=1e-3) and got["ci_low"] < a - b < got["ci_high"]
    assert got["p_value"] == pytest.approx(p)
    assert got["seed_df"] is None and got["sentences"] == 80 and (got["runs_a"], got["runs_b"]) == (1, 1)


def test_ribes_is_the_scorers_and_several_files_are_seeds(tmp_path: Path) -> None:
    files = write_corpus(tmp_path, {"a1": 0.8, "a2": 0.7, "b": 0.6})
    ribes = {}
    for name in ("a1", "a2", "b"):
        run = subprocess.run([sys.executable, "-m", "nmtlib", "score", "ribes", "--case-sensitive", "--hyp",
                              str(files[name]), "--ref", str(files["ref"])], capture_output=True, text=True, check=True)
        ribes[name] = json.loads(run.stdout.splitlines()[-1])["ribes"]
    got = last_json(compare("--ref", files["ref"], "--a", files["a1"], files["a2"], "--b", files["b"],
                            "--metric", "ribes"))
    assert got["a"] == pytest.approx((ribes["a1"] + ribes["a2"]) / 2, abs=1e-6)
    assert got["b"] == pytest.approx(ribes["b"], abs=1e-6)
    # two runs of A that differ: their spread widens the interval of the one-run comparison
    one = last_json(compare("--ref", files["ref"], "--a", files["a1"], "--b", files["b"], "--metric", "ribes"))
    assert got["seed_df"] is not None and one["seed_df"] is None
    assert got["ci_high"] - got["ci_low"] > one["ci_high"] - one["ci_low"]


def test_a_file_of_another_length_is_named(tmp_path: Path) -> None:
    files = write_corpus(tmp_path, {"a": 0.8, "b": 0.7})
    short = tmp_path / "short.txt"
    short.write_text("\n".join(files["b"].read_text(encoding="utf-8").splitlines()[:-1]) + "\n", encoding="utf-8")
    run = compare("--ref", files["ref"], "--a", files["a"], "--b", short)
    assert run.returncode == 2 and run.stdout == ""
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith(f"nmtlib compare: error: hypothesis file {short} has 79 lines but reference file "
                           f"{files['ref']} has 80 lines")
    paired = compare("--ref", files["ref"], "--a", files["a"], files["a"], "--b", files["b"], "--paired")
    assert paired.returncode == 2 and "--paired needs as many files for A as for B, got 2 and 1" in paired.stderr


def test_it_gives_a_published_finding_again_from_the_published_translations() -> None:
    """The De→En page's "global (dot) scores higher BLEU than global (general)", three seeds a side,
    from the translations published beside the page: the same difference and interval."""
    page = ROOT / "docs" / "results" / "multi30k-deen"
    row = pd.read_csv(page / "findings.csv").set_index("claim").loc[
        "global (dot) scores higher BLEU than global (general)"]
    t = page / "translations"
    got = last_json(compare("--ref", t / "reference.txt",
                            "--a", *(t / "global-dot-feed" / f"seed{k}" / "test.beam5.txt" for k in (1, 2, 3)),
                            "--b", *(t / "global-general-feed" / f"seed{k}" / "test.beam5.txt" for k in (1, 2, 3))))
    assert (got["runs_a"], got["runs_b"]) == (3, 3)
    for key in ("ci_low", "ci_high", "p_value"):
        assert got[key] == pytest.approx(row[key], abs=1e-4), key
    assert got["difference"] == pytest.approx(row["ours_diff"], abs=1e-4)


def test_the_command_offers_every_family_the_registry_can_compare() -> None:
    """``--metric``'s choices are spelled out for a fast start; they are the registry's families of
    the text as decoded with per-sentence statistics or scores, no more and no fewer."""
    from nmtlib.commands.compare import FAMILIES
    from nmtlib.report.metrics import text_families

    assert list(FAMILIES) == text_families()
