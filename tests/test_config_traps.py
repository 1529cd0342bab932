"""Config traps a new user fell into (issue #29, item 4), each checked with a real ``snakemake
-n`` on the real Snakefile or a real ``resolve_variant`` call: the README's example variant fits
the demo, a variant far larger than the others is a warning, a key given twice is an error, a
YAML 1.1 ``1e-4`` is explained, an unknown key gets a suggestion, and an error is one line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nmtlib.config import ConfigError, estimate_parameters, resolve_variant
from nmtlib.workflow_config import UniqueKeyLoader, check_config_files, size_warnings, validate_config

from conftest import ALL_VARIANTS, ROOT

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
TINY = ROOT / "tests" / "configs" / "tiny.yaml"
DEMO = ROOT / "config" / "config.yaml"


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir), "-n", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


#: the line Snakemake prints first when it reads the workflow profile (profiles/default), any run
PROFILE_NOTE = re.compile(r"Using workflow specific profile \S*profiles/default for setting default command line "
                          r"arguments\.")


def fails_with(workdir: Path, *args: str) -> str:
    """The one line a bad config prints (and that it is the only thing printed after Snakemake's
    note of the workflow profile, status 1)."""
    run = snakemake(workdir, *args)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    assert run.stdout == "", run.stdout[-2000:]
    note, *lines = run.stderr.splitlines()
    assert PROFILE_NOTE.fullmatch(note), run.stderr
    assert len(lines) == 1, run.stderr  # no "WorkflowError in file common.smk, line …", no traceback
    return lines[0]


def tiny_with(tmp_path: Path, old: str, new: str, name: str = "bad.yaml") -> Path:
    """tests/configs/tiny.yaml with one text edit, as a user makes it."""
    text = TINY.read_text()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1))
    return path


# -- 1. the README's example variant, and a variant far larger than the others ----------------

def readme_example() -> str:
    """The variant of README.md's "Adding a variant" example, as it would be pasted under
    ``variants:`` (its lines without the ``variants:`` header)."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Adding a variant"):]
    section = section[:section.index("\n## ", 1)]
    return re.search(r"```yaml\nvariants:\n(.*?)```", section, re.S).group(1)


def demo_with(tmp_path: Path, variant_text: str) -> Path:
    """config/config.yaml with ``variant_text`` pasted at the end of its ``variants:``."""
    text = DEMO.read_text()
    marker = "\n# Ensembles average"
    assert marker in text
    path = tmp_path / "config.yaml"
    path.write_text(text.replace(marker, "\n" + variant_text + marker, 1))
    return path


def test_readme_example_variant_plans_in_the_demo_without_a_warning(tmp_path):
    example = readme_example()
    assert "local-m-dot-feed:" in example and "hidden_size: 128" in example
    run = snakemake(tmp_path, "--configfile", str(demo_with(tmp_path, example)))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "warning:" not in run.stderr, run.stderr[:2000]
    assert "wildcards: variant=local-m-dot-feed, seed=1" in run.stdout
    assert re.search(r"train_model\s+6\b", run.stdout), run.stdout[-1500:]  # 5 demo models + the new one


def test_a_variant_with_a_presets_paper_sizes_in_the_demo_is_a_one_line_warning(tmp_path):
    example = "\n".join(line for line in readme_example().splitlines()
                        if not re.match(r"\s+(embedding_size|hidden_size|layers):", line)) + "\n"
    run = snakemake(tmp_path, "--configfile", str(demo_with(tmp_path, example)))
    assert run.returncode == 0, run.stderr[-3000:]  # a warning: the workflow still plans
    warnings = [line for line in run.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: variant 'local-m-dot-feed' has about 73M parameters (4 layers × 1000 units, 1000-d embeddings), "
        "more than 10× the median (0.9M) of the other variants of experiment 'demo'; its embedding_size, "
        "hidden_size and layers come from the preset arch: luong (a paper's sizes): give them to size it like the "
        "others"]
    readme = (ROOT / "README.md").read_text()
    assert warnings[0] in readme and warnings[0].replace("\n", " ") in (ROOT / "config" / "README.md").read_text() \
        .replace("\n  ", " ")


def test_an_explicit_size_far_beyond_the_others_is_a_warning_without_the_preset_hint():
    config = yaml.safe_load(TINY.read_text())
    # by hand: 1008·16 embeddings + 2 × (4·512·530 + 4·512·1026) LSTM + 513·504 softmax = 6,648,056; the others
    # 29,048 (base) and 30,840 (global-general-feed): median 29,944
    config["variants"]["huge"] = {"embedding_size": 16, "hidden_size": 512, "layers": 2, "attention": "none",
                                  "input_feed": False}
    variants = validate_config(config, SCHEMA)
    assert size_warnings(config, variants) == [
        "warning: variant 'huge' has about 6.6M parameters (2 layers × 512 units, 16-d embeddings), more than 10× the "
        "median (0.03M) of the other variants of experiment 'tiny'"]


def test_a_fine_tuning_stage_is_not_counted_and_one_variant_alone_is_no_warning():
    config = yaml.safe_load(TINY.read_text())
    config["variants"] = {"big": {"arch": "shu", "attention": "flexible"},
                          "big-ft": {"finetune_from": "big", "train": {"beta": 0.1}}}
    config["ensembles"] = {}
    assert size_warnings(config, validate_config(config, SCHEMA)) == []


@pytest.mark.parametrize("path", [DEMO, *sorted((ROOT / "config" / "experiments").glob("*.yaml"))],
                         ids=lambda p: p.name)
def test_no_shipped_config_has_an_outsized_variant(path):
    config = yaml.safe_load(path.read_text())
    assert size_warnings(config, validate_config(config, SCHEMA)) == []


def test_the_parameter_estimate_is_the_built_models_count():
    torch = pytest.importorskip("torch")
    from nmtlib.models.builder import build_model, count_parameters

    cases = {**ALL_VARIANTS, "luong": {"layers": 2, "hidden_size": 200, "embedding_size": 100},
             "rnnsearch-preset": {"arch": "rnnsearch", "hidden_size": 100, "embedding_size": 62, "output_size": 50,
                                  "attention_size": 30},
             "shu-preset": {"arch": "shu", "hidden_size": 100, "output_size": 60}}
    for name, options in cases.items():
        model = resolve_variant(name, options).model
        torch.manual_seed(0)
        built = count_parameters(build_model(model, 300 + 4, 200 + 4))
        assert estimate_parameters(model, 300, 200) == built, name


@pytest.mark.parametrize("path", sorted((ROOT / "config" / "experiments").glob("*.yaml")), ids=lambda p: p.name)
def test_the_parameter_estimate_is_exact_for_every_shipped_variant(path):
    """Every variant of every experiment (the overrides/ are partial configs, not experiments),
    with vocabularies of 97 and 113 words: the estimate restates the builder's layer shapes, and
    this holds the two together. Built on the meta device: the same modules, no storage, so a
    paper-sized model costs nothing to count."""
    torch = pytest.importorskip("torch")
    from nmtlib.models.builder import build_model, count_parameters
    from nmtlib.workflow_config import load_experiment

    _, variants = load_experiment(path)
    for name, variant in variants.items():
        with torch.device("meta"):
            built = count_parameters(build_model(variant.model, 97 + 4, 113 + 4))  # + the 4 special symbols
        assert estimate_parameters(variant.model, 97, 113) == built, name


# -- 2. a key given twice ---------------------------------------------------------------------

def test_a_variant_given_twice_is_an_error_naming_the_key_and_both_lines(tmp_path):
    bad = tiny_with(tmp_path, "ensembles:", "  base: {embedding_size: 32, hidden_size: 32, layers: 1}\nensembles:")
    assert fails_with(tmp_path, "--configfile", str(bad)) == (
        f"invalid configuration: {bad}: variants.base is given twice, on lines 15 and 17 (YAML would keep only the "
        f"second, silently); remove or rename one of them")


def test_a_key_given_twice_in_a_second_configfile_is_an_error(tmp_path):
    override = tmp_path / "override.yaml"
    override.write_text("train:\n  max_steps: 3\n  lr: 0.1\n  max_steps: 4\n")
    assert fails_with(tmp_path, "--configfile", str(TINY), str(override)) == (
        f"invalid configuration: {override}: train.max_steps is given twice, on lines 2 and 4 (YAML would keep only "
        f"the second, silently); remove or rename one of them")


def test_a_key_given_twice_in_the_default_config_is_an_error(tmp_path):
    """No --configfile: the Snakefile's ``configfile:`` (config/config.yaml, read from the working
    directory) is checked too."""
    (tmp_path / "config").mkdir()
    default = DEMO.read_text().replace("  beam: 5\n", "  beam: 5\n  beam: 4\n", 1)
    (tmp_path / "config" / "config.yaml").write_text(default)
    line = default.splitlines().index("  beam: 4") + 1
    assert fails_with(tmp_path) == (
        f"invalid configuration: config/config.yaml: decode.beam is given twice, on lines {line - 1} and {line} "
        f"(YAML would keep only the second, silently); remove or rename one of them")


def test_the_loader_checks_every_mapping_and_allows_merge_overrides():
    with pytest.raises(ConfigError, match=r"^<unicode string>: report\.heatmap_sentences\.0\.a is given twice, "
                                          r"on line 3 "):
        yaml.load("report:\n  heatmap_sentences:\n    - {a: 1, a: 2}\n", Loader=UniqueKeyLoader)
    merged = yaml.load("base: &b {x: 1, y: 2}\nv: {<<: *b, x: 3}\n", Loader=UniqueKeyLoader)
    assert merged["v"] == {"x": 3, "y": 2}


def test_every_shipped_config_file_has_unique_keys():
    check_config_files(sorted((ROOT / "config").rglob("*.yaml")))


# -- 3. 1e-4 ------------------------------------------------------------------------------------

@pytest.mark.parametrize("old, new, expected", [
    ("lr: 0.003,", "lr: 1e-4,",
     "invalid configuration: train.lr: '1e-4' is not of type 'number'; YAML 1.1 reads 1e-4 as a string (a number "
     "needs a dot and a signed exponent): write 1.0e-4"),
    ("  base: {", "  base: {dropout: 2E-1, ",
     "invalid configuration: variants.base.dropout: '2E-1' is not of type 'number'; YAML 1.1 reads 2E-1 as a string "
     "(a number needs a dot and a signed exponent): write 2.0e-1"),
])
def test_an_exponent_yaml_reads_as_a_string_is_explained(tmp_path, old, new, expected):
    assert fails_with(tmp_path, "--configfile", str(tiny_with(tmp_path, old, new))) == expected


def test_the_suggested_spelling_is_accepted(tmp_path):
    good = tiny_with(tmp_path, "lr: 0.003,", "lr: 1.0e-4,", "good.yaml")
    config = yaml.safe_load(good.read_text())
    assert validate_config(config, SCHEMA)["base"].train.lr == 1e-4
    assert snakemake(tmp_path, "--configfile", str(good)).returncode == 0


# -- 4. unknown keys: did you mean --------------------------------------------------------------

TOP_KEYS = "['cache_dir', 'data', 'decode', 'ensembles', 'experiment', 'jobs_per_gpu', 'only_variants', 'report', " \
           "'seeds', 'threads', 'train', 'variants']"


@pytest.mark.parametrize("old, new, expected", [
    ("threads: 1", "threds: 1",
     f"(top level): unknown key 'threds' (did you mean 'threads'?); allowed keys: {TOP_KEYS}"),
    ("seeds: [1]", "seeds: [1]\nbeam: 4",
     f"(top level): unknown key 'beam' (an option of decode:; put it there); allowed keys: {TOP_KEYS}"),
    ("  tokenizer:", "  tokeniser:", "data: unknown key 'tokeniser' (did you mean 'tokenizer'?); allowed keys: "),
    ("lr: 0.003,", "lr: 0.003, epoch: 2,", "train: unknown key 'epoch' (did you mean 'epochs'?); allowed keys: "),
    ("decode: {beam: 3,", "decode: {beem: 3,", "decode: unknown key 'beem' (did you mean 'beam'?); allowed keys: "),
    ("  base: {embedding_size: 16,", "  base: {embeding_size: 16, lr: 0.1,",
     "variants.base: unknown keys 'embeding_size' (did you mean 'embedding_size'?), 'lr' (an option of train:; put "
     "it there); allowed keys: "),
    ("  base: {", "  base: {train: {hiden_size: 8}, ",
     "variants.base.train: unknown key 'hiden_size' (did you mean 'hidden_size', an option of a variant?); "
     "allowed keys: "),
])
def test_an_unknown_key_gets_a_suggestion_at_every_level(tmp_path, old, new, expected):
    line = fails_with(tmp_path, "--configfile", str(tiny_with(tmp_path, old, new)))
    assert line.startswith("invalid configuration: " + expected), line
    assert line.endswith("]"), line


@pytest.mark.parametrize("raw, expected", [
    ({"hiden_size": 8}, "variants.v: unknown option 'hiden_size' (did you mean 'hidden_size'?); valid options: "),
    ({"train": {"optimiser": "adam"}},
     "variants.v.train: unknown option 'optimiser' (did you mean 'optimizer'?); valid options: "),
    ({"decode": {"beams": 4}}, "variants.v.decode: unknown option 'beams' (did you mean 'beam'?); valid options: "),
    ({"decode": {"zzz": 4}}, "variants.v.decode: unknown option 'zzz'; valid options: ['batch_size', "),
])
def test_resolve_variant_suggests_too(raw, expected):
    with pytest.raises(ConfigError) as err:
        resolve_variant("v", raw)
    assert str(err.value).startswith(expected), str(err.value)


@pytest.mark.parametrize("old, new, expected", [
    ("  ens: [global-general-feed]", "  ens: [global-genral-feed, nope]",
     "ensembles.ens: unknown variant(s) ['global-genral-feed' (did you mean 'global-general-feed'?), 'nope']; "
     "variants: ['base', 'global-general-feed']"),
    ("seeds: [1]", "seeds: [1]\nonly_variants: [bsae]",
     "only_variants: unknown variant(s) ['bsae' (did you mean 'base'?)]; variants: ['base', 'global-general-feed']"),
    ("  base: {", "  ft: {finetune_from: global-general-fed}\n  base: {",
     "variants.ft.finetune_from: 'global-general-fed' is not a variant of this experiment (did you mean "
     "'global-general-feed'?); variants: ['base', 'ft', 'global-general-feed']"),
])
def test_a_misspelt_variant_name_gets_a_suggestion(tmp_path, old, new, expected):
    assert fails_with(tmp_path, "--configfile", str(tiny_with(tmp_path, old, new))) == (
        "invalid configuration: " + expected)


# -- 5. one line, no location noise -------------------------------------------------------------

def test_a_semantic_error_is_one_line_too(tmp_path):
    """An error found after the schema (resolve_variant's combination checks) prints the same way."""
    bad = tiny_with(tmp_path, "attention: global, score: general,", "attention: local-p, score: location,")
    assert fails_with(tmp_path, "--configfile", str(bad)) == (
        "invalid configuration: variants.global-general-feed.score: 'location' is a fixed-length vector over "
        "positions (Luong Eq. 9); it is defined for global attention only, not 'local-p'")
