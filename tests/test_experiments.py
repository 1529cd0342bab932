"""The experiment configs of ``config/experiments/``: valid, complete DAGs, and real runs.

* Every config validates (schema + variant semantics), names existing paper rows, and
  ``snakemake -n`` lists exactly the jobs its variants, seeds, ensembles and τ sweeps call for,
  with the download cache pointed at an empty folder (a dry run needs no data).
* The small real configs cover the full variant list of the three papers.
* One real end-to-end run: small_parallel_enja with two variants of ``small-enja.yaml`` and the
  smoke override (12 updates per model), the cache pointed at the shared data, no network.
* A corrupted cache file is reported by checksum and never used, through the workflow.

Runs use ``--directory`` in a temporary folder, so nothing is written to the repository, and
check that nothing is written to the shared data folder either.
"""

from __future__ import annotations

import concurrent.futures
import csv
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nmtlib.workflow_config import validate_config

from conftest import SHARED

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = SHARED / "data"
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
EXPERIMENTS = sorted((ROOT / "config" / "experiments").glob("*.yaml"))
SMOKE = ROOT / "config" / "experiments" / "overrides" / "smoke.yaml"
SMALL = ["multi30k-ende", "multi30k-deen", "small-enja", "small-jaen"]
SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile")]

needs_shared = pytest.mark.skipif(
    not (SHARED_DATA / "small_parallel_enja" / "train.en").is_file(), reason="shared data not available"
)


def load(name: str) -> dict:
    return yaml.safe_load((ROOT / "config" / "experiments" / f"{name}.yaml").read_text(encoding="utf-8"))


def resolved(config: dict) -> dict:
    return validate_config(config, SCHEMA)


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``folder`` (hidden ones too) with its size and mtime."""
    return {str(p): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in [folder, *folder.rglob("*")]}


def snakemake(workdir: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*SNAKEMAKE, "--directory", str(workdir), *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


# --- every config ---------------------------------------------------------------------------


def test_experiment_folder_holds_every_paper_and_small_config() -> None:
    names = {p.stem for p in EXPERIMENTS}
    expected = {"luong2015-wmt14-ende", "luong2015-wmt15-deen", "bahdanau2015", "bahdanau2015-len30",
                "shu2017-enja", "shu2017-deen", *SMALL}
    assert expected <= names, f"missing: {sorted(expected - names)}"


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_config_validates_and_names_real_paper_rows(path: Path) -> None:
    from nmtlib.report.paper import resolve_paper_row

    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert config["experiment"] == path.stem, "results/<experiment>/ should be named after the file"
    variants = resolved(config)
    for name, variant in variants.items():
        resolve_paper_row(name, variant.paper_row)  # raises on an unknown table or row


def _features(variants: dict) -> set[str]:
    out = set()
    for name, v in variants.items():
        m = v.model
        if v.finetune_from and v.train.beta > 0 and v.decode.taus:
            out.add("flexible fine-tuned (beta) + tau")
            continue
        if m.arch == "rnnsearch":
            out.add("rnnsearch" if m.attention == "global" else f"rnnencdec {m.attention}")
        elif m.arch == "shu":
            out.add("flexible + tau" if m.attention == "flexible" and v.decode.taus else f"shu {m.attention}")
        elif m.attention == "none":
            out.add({(False, False): "base", (True, False): "reverse", (True, True): "dropout"}.get(
                (m.reverse_source, m.dropout > 0), "other"))
        else:
            out.add(f"{m.attention} {m.score}" + (" feed" if m.input_feed else ""))
    return out


@pytest.mark.parametrize("name", SMALL)
def test_small_config_covers_the_full_variant_list(name: str) -> None:
    config = load(name)
    variants = resolved(config)
    assert all(v.description and v.paper_row for v in variants.values()), "each variant says what it regenerates"
    features = _features(variants)
    for wanted in ("base", "reverse", "dropout", "global location", "global location feed", "global dot feed",
                   "global general feed", "global concat feed", "local-m general feed", "local-p general feed",
                   "local-p dot feed", "rnnencdec none", "rnnsearch", "shu global", "shu local-p", "flexible + tau",
                   "flexible fine-tuned (beta) + tau"):
        assert wanted in features, f"{name}: no variant for {wanted!r} (has {sorted(features)})"
    assert config["ensembles"], "an ensemble row"
    taus = {t for v in variants.values() for t in v.decode.taus}
    assert taus == {0.8, 1.0, 1.2, 1.4, 1.6}, "Shu's dev sweep"


PAPER_ROWS = {
    # config -> {table: rows the config must regenerate}
    "luong2015-wmt14-ende": {
        "luong_table1": {"base", "reverse", "dropout", "global-location", "feed", "local-p-general-feed", "unk"},
        "luong_table4": {"global-location", "global-dot", "global-general", "local-m-dot", "local-m-general",
                         "local-p-dot", "local-p-general", "global-concat", "local-m-concat", "local-p-concat"},
    },
    "luong2015-wmt15-deen": {
        "luong_table3": {"base-reverse", "global-location", "global-location-feed", "global-dot-drop-feed", "unk"},
    },
    "bahdanau2015": {"bahdanau_table1": {"rnnencdec-50", "rnnsearch-50"}},
    "bahdanau2015-len30": {"bahdanau_table1": {"rnnencdec-30", "rnnsearch-30"}},
    "shu2017-enja": {"shu_table1": {"global", "local", "flexible-inf", "flexible-1.2", "finetuned-1.2"}},
    "shu2017-deen": {"shu_table1": {"global", "local", "flexible-inf", "flexible-1.2", "finetuned-1.2"}},
}


@pytest.mark.parametrize("name", sorted(PAPER_ROWS))
def test_paper_config_regenerates_every_row_of_its_tables(name: str) -> None:
    from nmtlib.report.paper import resolve_paper_row

    variants = resolved(load(name))
    assert all(v.description for v in variants.values())
    covered: dict[str, set[str]] = {}
    for vname, v in variants.items():
        for table, keys in resolve_paper_row(vname, v.paper_row).items():
            covered.setdefault(table, set()).update(keys)
    for table, rows in PAPER_ROWS[name].items():
        assert rows <= covered.get(table, set()), f"{name}: {table} rows without a variant: {rows - covered.get(table, set())}"


def test_luong_config_is_the_papers_setting() -> None:
    config = load("luong2015-wmt14-ende")
    variants = resolved(config)
    assert config["data"]["vocab_size"] == {"src": 50000, "tgt": 50000} and config["data"]["max_len"] == 50
    assert config["data"]["splits"]["dev"]["src"] == "newstest2013.en"
    assert config["data"]["splits"]["test"]["src"] == "newstest2014.en"
    for name, v in variants.items():
        m, t = v.model, v.train
        assert (m.layers, m.hidden_size, m.embedding_size) == (4, 1000, 1000), name
        assert (t.optimizer, t.lr, t.batch_size, t.clip, t.init_range) == ("sgd", 1.0, 128, 5.0, 0.1), name
        assert (t.epochs, t.decay_start) == ((12, 9) if m.dropout else (10, 6)), name
        assert v.decode.unk_replace, name
    assert len(config["ensembles"]["ensemble-8"]) == 8


# --- snakemake -n: every job, no data needed ------------------------------------------------


def expected_jobs(config: dict) -> dict[str, int]:
    """Job counts the workflow should plan (mirrors workflow/rules)."""
    variants = resolved(config)
    # a variant's own seeds win over the experiment's (config/README.md, `variants.<name>.seeds`)
    seeds = {n: len((config["variants"][n] or {}).get("seeds") or config["seeds"]) for n in variants}
    ensembles = config.get("ensembles") or {}
    attentional = [n for n, v in variants.items() if v.model.attention != "none"]
    settings = sum(seeds[n] * (1 + len(v.decode.taus)) for n, v in variants.items()) + len(ensembles)
    models, attentional_models = sum(seeds.values()), sum(seeds[n] for n in attentional)
    corpus = {"generate_corpus": 1} if config["data"]["corpus"] == "synthetic" else {"download_corpus": 1, "copy_split": 6}
    jobs = {
        **corpus, "prepare_split": 3, "build_vocab": 2,
        "train_model": models, "test_perplexity": models,
        "export_attention": attentional_models, "translate": settings, "score_translation": settings,
        "make_report": 1, "all": 1,
        "decode_settings": len(variants),  # each variant's decoding options beside its models
    }
    if config["data"].get("alignments"):
        jobs["score_alignment"] = attentional_models
    dictionary = config["data"].get("dictionary")
    if config["data"]["corpus"] != "synthetic" and dictionary not in (None, "generated"):
        from nmtlib.data.corpora import load_registry

        files = {e.tofu_key for e in load_registry().dataset(config["data"]["corpus"]).files.values()}
        if dictionary in files:  # a file of the data set: verified, then copied into the run
            jobs["copy_dictionary"] = 1
    return jobs


def _dry_run(path: Path, workdir: Path) -> tuple[subprocess.CompletedProcess, Path]:
    cache = workdir / "empty-cache"
    return snakemake(workdir, "-n", "--cores", "1", "--configfile", str(path),
                     "--config", f"cache_dir={cache}", timeout=240), cache


@pytest.fixture(scope="module")
def dry_runs(tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """``snakemake -n`` of every config, two at a time (each is mostly interpreter start-up): its
    plan (every job, with its priority where it is not 0) and the job counts."""
    base = tmp_path_factory.mktemp("dry")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {p.stem: pool.submit(_dry_run, p, base / p.stem) for p in EXPERIMENTS}
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_dry_run_lists_every_job_without_data(path: Path, dry_runs) -> None:
    result, cache = dry_runs[path.stem]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    counts = {m.group(1): int(m.group(2))
              for m in re.finditer(r"^([a-z_]+)\s+(\d+)$", result.stdout + result.stderr, re.M)
              if m.group(1) != "total"}
    assert counts == expected_jobs(yaml.safe_load(path.read_text(encoding="utf-8")))
    assert not cache.exists(), "a dry run must not touch the download cache"


def planned_priorities(plan: str) -> list[tuple[str, float]]:
    """(rule, priority) of every job of a ``snakemake -n`` plan; a job block names its priority
    only where it is not 0."""
    jobs: list[tuple[str, float]] = []
    for line in plan.splitlines():
        if m := re.match(r"^(?:local)?(?:rule|checkpoint) (\w+):$", line):
            jobs.append((m.group(1), 0.0))
        elif (m := re.match(r"^\s+priority: (\S+)$", line)) and jobs:
            jobs[-1] = (jobs[-1][0], float(m.group(1)))
    return jobs


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_every_job_but_a_training_goes_before_any_training(path: Path, dry_runs) -> None:
    """Reliability W7: on few cores a training starts only when no other job is ready, so each
    trained model is scored, and whatever its scoring needs (the test split, the decoding settings,
    the dictionary) is made, before the next training. Snakemake runs the ready job of highest
    priority first; `all` runs nothing and waits on every job."""
    result, _ = dry_runs[path.stem]
    jobs = planned_priorities(result.stdout + result.stderr)
    trainings = [p for rule, p in jobs if rule == "train_model"]
    others = {(rule, p) for rule, p in jobs if rule not in ("train_model", "all")}
    assert trainings and others
    assert [(rule, p) for rule, p in sorted(others) if p <= max(trainings)] == []


def test_the_docs_table_gives_every_experiment_and_its_dry_run_job_count(dry_runs) -> None:
    """docs/experiments.md's table: one row per config file (a row may name several), its last cell
    the total of that config's dry run."""
    table = {}
    for line in (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and cells[-1].isdigit():
            table.update({name: int(cells[-1]) for name in re.findall(r"`([^`]+)`", cells[0])})
    totals = {name: int(re.search(r"^total\s+(\d+)$", result.stdout + result.stderr, re.M).group(1))
              for name, (result, _) in dry_runs.items()}
    assert table == totals


def test_dry_run_rejects_a_split_file_the_registry_does_not_know(tmp_path: Path) -> None:
    config = load("small-enja")
    config["data"]["splits"]["test"]["tgt"] = "test.jp"
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result, _ = _dry_run(path, tmp_path / "work")
    assert result.returncode != 0
    message = "data.splits.test.tgt: 'test.jp' is not a file of data set 'small_parallel_enja'"
    assert message in result.stdout + result.stderr


# --- real runs on the shared data -----------------------------------------------------------


def _subset(name: str, variants: list[str], experiment: str, out: Path) -> Path:
    """The real config with only some variants (and no ensemble), under another experiment name;
    each trains the experiment's seeds (a variant's own, more for a close claim, are dropped: test size)."""
    config = load(name)
    config["experiment"] = experiment
    config["variants"] = {v: {k: x for k, x in config["variants"][v].items() if k != "seeds"} for v in variants}
    config.pop("ensembles", None)
    out.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return out


@needs_shared
@pytest.mark.slow
def test_small_enja_runs_end_to_end_from_the_shared_cache(tmp_path: Path) -> None:
    """Download (verify only), copy, prepare, vocab, train 12 steps, decode, score, report."""
    config = _subset("small-enja", ["base", "global-general-feed"], "small-enja-e2e", tmp_path / "exp.yaml")
    before = snapshot(SHARED_DATA)
    result = snakemake(tmp_path, "--cores", "2", "--configfile", str(config), str(SMOKE),
                       "--config", f"cache_dir={SHARED_DATA}", timeout=600)
    assert result.returncode == 0, result.stderr[-5000:]
    assert snapshot(SHARED_DATA) == before, "the shared data must be read, never written"

    out = tmp_path / "results" / "small-enja-e2e"
    manifest = json.loads((out / "corpus" / "download.json").read_text(encoding="utf-8"))
    assert sorted(manifest) == ["dev.en", "dev.ja", "test.en", "test.ja", "train.en", "train.ja"]
    assert all(Path(p).parent == SHARED_DATA / "small_parallel_enja" for p in manifest.values())
    assert (out / "corpus" / "test.tgt").read_bytes() == (SHARED_DATA / "small_parallel_enja" / "test.ja").read_bytes()
    stats = json.loads((out / "data" / "train.stats.json").read_text(encoding="utf-8"))
    assert stats["read"] == 50000 and stats["kept"] == 50000

    for variant in ("base", "global-general-feed"):
        log = list(csv.DictReader((out / "models" / variant / "seed1" / "train_log.csv").open(encoding="utf-8")))
        assert int(log[-1]["step"]) == 12, "the smoke override stops training after 12 updates"
        hyps = (out / "translations" / variant / "seed1" / "test.beam2.txt").read_text(encoding="utf-8")
        assert hyps.count("\n") == 500
    rows = {r["variant"]: r for r in csv.DictReader((out / "tables" / "summary.csv").open(encoding="utf-8"))}
    assert set(rows) == {"base", "global-general-feed"}
    for row in rows.values():
        float(row["bleu_before_unk_replace"]), float(row["test_ppl"])  # numbers, whatever their (untrained) values
    assert (out / "tables" / "summary.md").is_file()
    assert (out / "figures" / "attention_heatmaps.png").stat().st_size > 0


@needs_shared
def test_corrupted_cache_file_is_reported_and_never_used(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(SHARED_DATA / "small_parallel_enja", cache / "small_parallel_enja")
    bad = cache / "small_parallel_enja" / "train.ja"
    bad.chmod(0o644)
    data = bytearray(bad.read_bytes())
    data[1000] ^= 0x01  # one flipped bit, same size
    bad.write_bytes(bytes(data))
    config = _subset("small-enja", ["base"], "small-enja-corrupt", tmp_path / "exp.yaml")

    result = snakemake(tmp_path, "--cores", "1", "--configfile", str(config), str(SMOKE),
                       "--config", f"cache_dir={cache}", timeout=240)
    assert result.returncode != 0
    log = (tmp_path / "logs" / "small-enja-corrupt" / "download_corpus.log").read_text(encoding="utf-8")
    assert f"{bad}: sha256 mismatch" in log
    assert "fc81a1434349ec98a449d7ae9cd2530057f689637684ecfed3501ea6a8a07ecc" in log  # the expected one
    # offline: the re-download fails and says where the file can be placed by hand
    assert "raw.githubusercontent.com/odashi/small_parallel_enja" in log and f"by hand at {bad}" in log
    assert not bad.exists() and bad.with_name("train.ja.corrupt").is_file(), "moved aside, not left in place"
    out = tmp_path / "results" / "small-enja-corrupt"
    assert not (out / "corpus" / "download.json").exists()
    assert not (out / "corpus" / "train.tgt").exists() and not (out / "data").exists(), "nothing used the corrupt file"


def test_a_fine_tuning_without_seeds_of_its_own_takes_its_parents() -> None:
    """One fine-tuning per parent model: its claims pair each with the parent it started from (the
    β window claim is relative and cannot be made unpaired), so a fine-tuned variant without
    ``seeds`` takes its parent's, not the experiment's."""
    from nmtlib.workflow_config import variant_seeds

    config = {"seeds": [1], "variants": {"flex": {"seeds": [1, 2, 3]}, "flex-ft": {"finetune_from": "flex"},
                                         "ft-own": {"finetune_from": "flex", "seeds": [2]}, "base": {}}}
    assert variant_seeds(config, "flex-ft") == [1, 2, 3]
    assert variant_seeds(config, "ft-own") == [2]
    assert variant_seeds(config, "base") == [1]
