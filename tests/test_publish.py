"""``nmtlib publish``: the reference-results page of an experiment, from its real report outputs.

The page must read as a paper's results section (narrow tables, today's column names, counts as
integers, one list of commits, no path outside the repository) and let a reader check it: every
test translation beside it, and a sacreBLEU command that, run as the page writes it, prints the
page's BLEU.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import torch
from PIL import Image

from nmtlib.cli import main
from nmtlib.metrics.bleu import tokenized_bleu
from test_report import TGT, _spec_json, make_experiment

#: a translation that misses the last word of every test sentence
SHORT = [" ".join(t.split()[:-1]) for t in TGT]


def repository(tmp_path: Path) -> Path:
    """A git work tree for the page (the page's paths are relative to its root)."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


def reported_experiment(tmp_path: Path, translations: bool = False) -> tuple[Path, Path]:
    """(repository root, results folder) of the unit experiment, its report made; with
    ``translations``, :func:`write_translations` first."""
    root = repository(tmp_path)
    results = root / "results" / "unit"
    spec = make_experiment(results)
    if translations:
        write_translations(results)
    assert main(["report", "--spec", _spec_json(spec), "--out", str(results)]) == 0
    return root, results


def run_page_command(command: str, root: Path) -> subprocess.CompletedProcess:
    """A command as the page prints it, run from the repository root with this Python's scripts
    (sacrebleu) on the PATH."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(command, shell=True, cwd=root, capture_output=True, text=True, env=env, timeout=120)


def write_translations(results: Path) -> None:
    """Texts for every run of flex-ft (τ = ∞ and τ = 1.2) and of base, and their tokenized BLEU
    (multi-bleu.perl's, nmtlib's scorer) in the scores, as the workflow writes them."""
    for name, lines in (("flex-ft", TGT), ("base", SHORT)):
        for seed in ("seed1", "seed2"):
            for setting in (["beam5", "beam5.tau1.2"] if name == "flex-ft" else ["beam5"]):
                prefix = results / "translations" / name / seed / f"test.{setting}"
                for ext in (".txt", ".unk.txt"):
                    Path(f"{prefix}{ext}").write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
                path = results / "scores" / name / seed / f"test.{setting}.json"
                scores = json.loads(path.read_text())
                scores["bleu"]["bleu"] = scores["bleu_unk"]["bleu"] = tokenized_bleu(lines, TGT).score
                path.write_text(json.dumps(scores))


def publish(tmp_path: Path, *extra: str, command: str = "snakemake --cores 2") -> tuple[int, Path]:
    results = tmp_path / "results" / "unit"
    out = tmp_path / "docs" / "results" / "unit.md"
    code = main(["publish", "--results", str(results), "--out", str(out), "--command", command,
                 "--hardware", "2 test cores", *extra])
    return code, out


def test_results_page_from_an_experiments_outputs(tmp_path: Path) -> None:
    root, results = reported_experiment(tmp_path)
    # base, seed 1: the trainer's clock at each epoch end; its job's last attempt resumed and used 90 s of CPU
    (results / "models" / "base" / "seed1" / "train_log.csv").write_text(
        "epoch,step,lr,train_ppl,dev_ppl,target_tokens_per_s,elapsed_s\n"
        "1,100,0.003,61,70,1000,41.0\n2,200,0.003,31,45,1000,82.0\n3,300,0.003,21,36.6667,1000,123.4\n",
        encoding="utf-8")
    (results / "models" / "base" / "seed1" / "env.json").write_text(json.dumps(
        {"git_commit": "a" * 40, "variant": {"train": {"bf16": True}}}))
    logs = root / "logs" / "unit"
    bench = logs / "benchmark" / "train_model" / "base.seed1.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\th:m:s\tmax_rss\tcpu_time\n60.0\t0:01:00\t500\t90.0\n", encoding="utf-8")
    (logs / "train_model").mkdir()
    (logs / "train_model" / "base.seed1.log").write_text("[train] resuming from x/last.pt: epoch 2\n")
    (logs / "train_model" / "local-p.seed1.log").write_text("base epoch 1: 100%\n")
    # in the results folder too, but not among the page's models: one still training (its log and
    # checkpoints, no model.pt yet), and a finished one of a variant the tables leave out (trained
    # before only_variants named the rest)
    for folder, done in ((results / "models" / "base" / "seed3", False),
                         (results / "models" / "old-variant" / "seed1", True)):
        (folder / "checkpoints").mkdir(parents=True)
        (folder / "train_log.csv").write_text("epoch,step,lr,train_ppl,dev_ppl\n1,100,0.003,61,70\n", encoding="utf-8")
        torch.save({}, folder / ("model.pt" if done else "checkpoints/last.pt"))
    code, out = publish(root, "--logs", str(logs))
    assert code == 0
    page = out.read_text(encoding="utf-8")
    assert "| models | 12 trained" in page and "| base | seed3 |" not in page and "| old-variant |" not in page
    assert page.startswith("# Reference results: unit")
    assert "| command | `snakemake --cores 2` |" in page and "| hardware | 2 test cores |" in page
    # one list of commits: the models' (base seed1's env.json; the others record none)
    (commits,) = [line for line in page.splitlines() if line.startswith("| commits |")]
    assert "`aaaaaaaaaaaa` (training of 1 model)" in commits and "not recorded (training of 11 models)" in commits
    assert [line for line in page.splitlines() if line.startswith("| commit")] == [commits]
    # base, seed 1: dev ppl 70, 45, 36.67; the last epoch lowered the best before it (45) by
    # (45 − 36.67) / 45 = 18.5%; the trainer's clock ended at 123.4 s = 2.1 min; 90 s = 1.5 min of CPU
    # its own test BLEU, 10 (the fixture's seed 1 at beam5; seed 2 has 12: the summary's 11 is their mean)
    assert "| base | seed1 | 3 | 3 | 36.67 | 10.00 | 18.5% | 2.1 min | 1.5 min | yes |  | bf16 |" in page
    assert re.search(r"\| base \| seed2 \|[^\n]*\| 12\.00 \|", page)
    # its record says it trained in bf16, a deviation from the papers' float32; the others record nothing
    (precision,) = [line for line in page.splitlines() if line.startswith("| precision |")]
    assert "bf16 autocast" in precision and "the papers train in float32: 1 model" in precision
    assert "not recorded: 11 models" in precision
    local_p = next(line for line in page.splitlines() if line.startswith("| local-p | seed1 |"))
    assert "| no |" in local_p  # its job log has no resume
    for heading in ("## Findings", "## Summary", "### Shu & Nakayama 2017, Table 1", "## Translations",
                    "## Models trained", "## Figures"):
        assert heading in page, heading
    # the findings as claim | paper | ours | 95% interval | seeds | verdict; every column in the CSV beside
    header = next(line for line in page.splitlines() if line.startswith("| claim "))
    assert [c.strip() for c in header.strip("|").split("|")] == ["claim", "paper", "ours", "95% interval", "seeds",
                                                                 "verdict"]
    # seeds: the unit experiment trains every variant at seeds 1 and 2 (test_report.make_experiment), and
    # an ensemble is one model
    section = page.split("## Findings")[1].split("\n## ")[0]
    seeds = {cells[0]: cells[4] for line in section.splitlines() if line.startswith("| ") and not line.startswith("| claim")
             for cells in [[c.strip() for c in line.strip("|").split("|")]]}
    assert seeds.pop("An ensemble beats its best member") == "1 / 2"
    assert seeds and set(seeds.values()) == {"2 / 2"}
    assert (out.parent / "unit" / "findings.csv").read_text() == (results / "tables" / "findings.csv").read_text()
    assert "- Not tested, no variant regenerates the paper's rows: Reversing the source helps the base model;" in page
    # how far a model moves from seed to seed: base (10, 12) and global-feed (14, 16) vary by 2, the other
    # four variants' two seeds not at all: (2 + 2 + 0 + 0 + 0 + 0) / 6 on 6 degrees of freedom, sd 0.82
    assert ("Seed to seed, one model's test BLEU before unk replacement has a standard deviation of 0.82 here, "
            "pooled over the 6 variants with several seeds scored (6 degrees of freedom)") in section
    # no table line as wide as the old page's 800 characters: the widest has the paper's long row labels
    assert max(len(line) for line in page.splitlines() if line.startswith("|")) < 400
    # today's column names, and numbers as what they are: base ran 2 seeds (an integer), its BLEU
    # 11.00 ± 1.41 (10 and 12), beside the length ratio its brevity penalty read (0.910 and 0.912)
    assert re.search(r"\| base +\| 2 +\| 21\.00 ± 1\.41 +\| 11\.00 ± 1\.41 +\| 0\.911 ± 0\.001 ", page)
    # RIBES beside BLEU and chrF (the word-order metric Japanese results are read by)
    summary_header = next(line for line in page.splitlines() if line.startswith("| variant ") and "runs" in line)
    assert [c.strip() for c in summary_header.strip("|").split("|")][6:8] == ["chrf_before_unk_replace",
                                                                              "ribes_after_unk_replace"]
    for old in ("| ppl", "bleu_unk", "| aer ", "within_spread"):
        assert old not in page, old
    # a paper table no variant regenerates a row of is named, not printed
    assert "### Luong et al. 2015, Table 3" not in page
    assert ("Not regenerated by this experiment (no variant maps a row with a result): Luong et al. 2015, "
            "Table 3.") in page
    # no path outside the repository (the results are in it here; nor any absolute path)
    assert str(tmp_path) not in page
    # every figure the report drew, attention heatmaps included, with its caption
    for name, title in (("learning_curves", "Learning curves"), ("bleu_by_length", "BLEU by sentence length"),
                        ("attention_heatmaps", "Attention heatmaps"), ("window_tradeoff", "Window against BLEU"),
                        ("vision_span", "Vision span per step")):
        png = out.parent / "unit" / f"{name}.png"
        assert f"![{title}](unit/{name}.png)\n\n**{title}** (as " in page
        with Image.open(png) as im:
            assert im.width <= 900


def test_the_commits_are_listed_oldest_first(tmp_path: Path) -> None:
    """A run trained over several commits lists them as they came, whatever the order of the variants:
    base seed 1 was trained at the later of two real commits, local-p seed 1 at the earlier."""
    root, results = reported_experiment(tmp_path)
    shas = []
    for day in ("2026-01-01T00:00:00", "2026-01-02T00:00:00"):
        env = {**os.environ, "GIT_AUTHOR_DATE": day, "GIT_COMMITTER_DATE": day, "GIT_AUTHOR_NAME": "t",
               "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
        subprocess.run(["git", "-C", str(root), "commit", "-q", "--allow-empty", "-m", day], check=True, env=env)
        shas.append(subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                   text=True, check=True).stdout.strip())
    older, newer = shas
    for variant, sha in (("base", newer), ("local-p", older)):
        (results / "models" / variant / "seed1" / "env.json").write_text(json.dumps({"git_commit": sha}))
    code, out = publish(root)
    assert code == 0
    (commits,) = [line for line in out.read_text(encoding="utf-8").splitlines() if line.startswith("| commits |")]
    assert commits.index(f"`{older[:12]}` (training of 1 model)") < commits.index(f"`{newer[:12]}` (training of 1 model)")
    # models with no commit recorded come after the known ones, then the page's own commit
    assert commits.index(f"`{newer[:12]}` (training") < commits.index("not recorded (training of 10 models)")
    assert commits.endswith(f"`{newer[:12]}` (tables, findings and this page) |")


def test_the_page_says_whether_the_training_code_differs_between_the_models_commits(tmp_path: Path) -> None:
    """Three real commits: the second changes only report code, the third a model's cell. The page
    names the third change and not the second; with the first two commits only, the code is the same."""
    root, results = reported_experiment(tmp_path)
    shas = []
    for k, (path, text) in enumerate((("nmtlib/train/trainer.py", "a"), ("nmtlib/report/tables.py", "b"),
                                      ("nmtlib/models/cells.py", "c"))):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
        day = f"2026-01-0{k + 1}T00:00:00"
        env = {**os.environ, "GIT_AUTHOR_DATE": day, "GIT_COMMITTER_DATE": day, "GIT_AUTHOR_NAME": "t",
               "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
        subprocess.run(["git", "-C", str(root), "add", path], check=True)
        subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", path], check=True, env=env)
        shas.append(subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                   text=True, check=True).stdout.strip())

    def row(*trained_at: str) -> str:
        for variant, sha in zip(("base", "local-p", "flex"), trained_at):
            (results / "models" / variant / "seed1" / "env.json").write_text(json.dumps({"git_commit": sha}))
        code, out = publish(root)
        assert code == 0
        rows = [line for line in out.read_text(encoding="utf-8").splitlines() if line.startswith("| training code |")]
        return rows[0] if rows else ""

    first, second, third = shas
    text = row(first, second, third)
    assert f"`{second[:12]}` → `{third[:12]}`: nmtlib/models/cells.py" in text
    assert f"`{first[:12]}` → `{second[:12]}`" not in text and "nmtlib/report" not in text
    assert "the same at these 2 commits" in row(first, second, second)
    assert row(first, first, first) == ""  # one commit: nothing to compare


def test_the_page_says_where_and_at_which_commits_each_model_trained(tmp_path: Path) -> None:
    """A model started on one machine and resumed on another, at another commit with an uncommitted
    change to the trainer; one recorded before records listed their starts (device only); the rest
    record nothing. The page names each machine and commit, counts the models at each, and says which
    model's commit does not name the code that trained it."""
    root, results = reported_experiment(tmp_path)
    a, b = "a" * 40, "b" * 40
    (results / "models" / "base" / "seed1" / "env.json").write_text(json.dumps({
        "git_commit": b, "device": "cpu", "starts": [
            {"step": 0, "at": "2026-12-06T02:03:11Z", "git_commit": a, "changed_training_code": [],
             "processor": "CPU One", "cpu_capability": "AVX2", "device": "cpu", "cuda_device": None},
            {"step": 4885, "at": "2026-12-08T10:41:59Z", "git_commit": b,
             "changed_training_code": ["nmtlib/train/trainer.py"], "processor": "CPU Two",
             "cpu_capability": "AVX512", "device": "cpu", "cuda_device": None}]}))
    (results / "models" / "local-p" / "seed1" / "env.json").write_text(json.dumps({"git_commit": a, "device": "cpu"}))
    code, out = publish(root)
    assert code == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    (commits,) = [line for line in lines if line.startswith("| commits |")]
    assert "`aaaaaaaaaaaa` (training of 2 models)" in commits and "`bbbbbbbbbbbb` (training of 1 model)" in commits
    (where,) = [line for line in lines if line.startswith("| processors |")]
    assert where == ("| processors | not recorded: 10 models; CPU One, AVX2: 1 model; CPU Two, AVX512: 1 model; "
                     "cpu (processor not recorded): 1 model (1 model resumed on another machine) |")
    # when: base seed1's two starts, the only ones that record a time (12 models trained in all)
    (when,) = [line for line in lines if line.startswith("| when |")]
    assert when == ("| when | 2026-12-06 02:03 to 2026-12-08 10:41 UTC: the first and the last start of a model's "
                    "training (2 starts of 1 model, 1 resume); 11 models without a record of when |")
    (changed,) = [line for line in lines if line.startswith("| uncommitted training code |")]
    assert "1 model started with uncommitted changes to `nmtlib/train/trainer.py`" in changed
    assert changed.endswith("(base seed1) |")
    base = next(line for line in lines if line.startswith("| base | seed1 |"))
    assert base.endswith("| CPU One, AVX2 from step 0; CPU Two, AVX512 from step 4,885 |  |  | "
                         "`aaaaaaaaaaaa`, `bbbbbbbbbbbb` |")
    local_p = next(line for line in lines if line.startswith("| local-p | seed1 |"))
    assert "| cpu (processor not recorded) |" in local_p and local_p.endswith("| `aaaaaaaaaaaa` |")


def test_counts_are_integers_in_the_tables(tmp_path: Path) -> None:
    """Bahdanau Table 1's no-UNK sentence count (4 in the fixture) was printed as 4.00."""
    results = tmp_path / "results" / "unit"
    spec = make_experiment(results)
    assert main(["report", "--spec", _spec_json(spec), "--out", str(results)]) == 0
    md = (results / "tables" / "bahdanau_table1.md").read_text(encoding="utf-8")
    row = next(line for line in md.splitlines() if line.startswith("| rnnsearch-50 "))
    assert "| 4 " in row and "4.00" not in row


def test_every_translation_is_published_and_the_rescore_command_prints_the_pages_bleu(tmp_path: Path) -> None:
    root, results = reported_experiment(tmp_path, translations=True)
    code, out = publish(root)
    assert code == 0
    page = out.read_text(encoding="utf-8")
    published = out.parent / "unit" / "translations"
    sources = sorted(p.relative_to(results / "translations") for p in (results / "translations").glob("*/*/*.txt"))
    assert len(sources) == 2 * 2 * 2 + 2 * 1 * 2  # (seeds × settings × before/after) of flex-ft, then base
    assert sorted(p.relative_to(published) for p in published.glob("*/*/*.txt")) == sources
    for rel in sources:
        assert (published / rel).read_bytes() == (results / "translations" / rel).read_bytes()
    assert (published / "reference.txt").read_text() == (results / "data" / "test.tgt").read_text()
    # the best single model: flex-ft translates perfectly (BLEU 100); its seed 1 at τ = ∞
    (command,) = re.findall(r"```sh\n(.*?)\n```", page, re.S)
    assert "\n" not in command and "docs/results/unit/translations/flex-ft/seed1/test.beam5.txt" in command
    bleu = re.search(r"prints its BLEU, \*\*([\d.]+)\*\*", page).group(1)
    assert bleu == "100.00"
    run = run_page_command(command, root)
    assert run.returncode == 0, run.stderr
    printed = re.search(r"^BLEU\|(\S+) = ([\d.]+) ", run.stdout, re.M)
    assert printed.group(2) == bleu
    assert f"`{printed.group(1)}`" in page  # the page gives the signature the command prints


def test_the_rescore_command_of_a_row_scores_what_the_table_says(tmp_path: Path) -> None:
    """The same command on another row (base, whose every sentence misses its last word) prints
    its tokenized BLEU as the tables have it (multi-bleu.perl's, 2 decimals)."""
    root, results = reported_experiment(tmp_path, translations=True)
    _, out = publish(root)
    (command,) = re.findall(r"```sh\n(.*?)\n```", out.read_text(encoding="utf-8"), re.S)
    command = command.replace("flex-ft/seed1/test.beam5.txt", "base/seed2/test.beam5.txt")
    run = run_page_command(command, root)
    printed = re.search(r"^BLEU\|\S+ = ([\d.]+) ", run.stdout, re.M).group(1)
    assert printed == f"{tokenized_bleu(SHORT, TGT).score:.2f}"


def test_a_path_outside_the_repository_is_refused(tmp_path: Path, capsys) -> None:
    root, results = reported_experiment(tmp_path)
    capsys.readouterr()  # what the report said
    code, out = publish(root, command="snakemake --cores 2 --config cache_dir=../shared/data")
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err.strip()
    assert "../shared/data" in err and "outside the repository" in err and len(err.splitlines()) == 1


def test_a_smoke_run_says_so(tmp_path: Path) -> None:
    """A model whose env.json records train.max_steps and whose log ends there: no verdict."""
    root, results = reported_experiment(tmp_path)
    (results / "models" / "base" / "seed1" / "env.json").write_text(
        json.dumps({"variant": {"train": {"max_steps": 300}}}))  # its log (test_report's) ends at step 300
    _, out = publish(root)
    assert "**No verdict: smoke run**: models stopped after train.max_steps = 300 updates" in out.read_text()


def test_findings_beside_another_experiments(tmp_path: Path) -> None:
    """The other direction's findings beside this one's (issue #40): each claim either tests, one
    row per experiment, from that experiment's own findings.csv."""
    root, results = reported_experiment(tmp_path)
    other = root / "results" / "unit-back"
    other.mkdir()
    (other / "tables").mkdir()
    findings = pd.read_csv(results / "tables" / "findings.csv")
    tested = findings[findings["verdict"] != "not tested"]
    first, second = tested.iloc[0]["claim"], tested.iloc[1]["claim"]
    # the other direction: the first claim does not hold there (−0.5 [−0.9, −0.1]); the second is untested
    back = findings.copy()
    i = back.index[back["claim"] == first][0]
    back.loc[i, ["ours_diff", "ci_low", "ci_high", "verdict"]] = [-0.5, -0.9, -0.1, "does not hold"]
    back.loc[back["claim"] == second, "verdict"] = "not tested"
    back.to_csv(other / "tables" / "findings.csv", index=False)
    before = {p: p.read_bytes() for p in other.rglob("*") if p.is_file()}
    code, out = publish(root, "--beside", str(other))
    assert code == 0
    # the page's own files go beside the page, and the other experiment's folder is only read
    assert (out.parent / out.stem / "findings.csv").exists()
    assert {p: p.read_bytes() for p in other.rglob("*") if p.is_file()} == before
    page = out.read_text(encoding="utf-8")
    assert "## Beside `unit-back`" in page
    section = page.split("## Beside `unit-back`")[1].split("\n## ")[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
            if line.startswith("|") and not line.startswith("|:")]
    assert rows[0] == ["claim", "experiment", "paper", "ours", "95% interval", "seeds", "verdict"]
    ours = tested.iloc[0]
    assert rows[1][:2] == [first, "unit"] and rows[1][6] == ours["verdict"]
    assert rows[2] == ["", "unit-back", rows[1][2], "-0.50", "[-0.90, -0.10]", rows[1][5], "does not hold"]
    assert rows[3][:2] == [second, "unit"] and rows[4][1:] == ["unit-back", "—", "—", "—", "—", "not tested"]
    # every claim tested in either, each once per experiment
    assert len(rows) - 1 == 2 * len(tested)
    # a published page's folder serves as well (results folders are not committed): the same section
    published = root / "docs" / "results" / "unit-back"
    published.mkdir(parents=True)
    (other / "tables" / "findings.csv").rename(published / "findings.csv")
    before = {p: p.read_bytes() for p in published.rglob("*") if p.is_file()}
    code, again = publish(root, "--beside", str(published))
    assert code == 0
    assert {p: p.read_bytes() for p in published.rglob("*") if p.is_file()} == before
    assert again.read_text(encoding="utf-8").split("## Beside `unit-back`")[1].split("\n## ")[0] == section
    # a page published before the findings counted each side's models (no runs_a / runs_b): its seeds come
    # from the summary beside it, the runs of the variant each side of `compared` names (here 2 / 2, the
    # fixture's two seeds, as the page's own row says)
    old = pd.read_csv(published / "findings.csv").drop(columns=["runs_a", "runs_b"])
    old.to_csv(published / "findings.csv", index=False)
    summary = pd.read_csv(results / "tables" / "summary.csv")
    summary.to_csv(published / "summary.csv", index=False)
    code, third = publish(root, "--beside", str(published))
    assert code == 0 and third.read_text(encoding="utf-8").split("## Beside `unit-back`")[1].split("\n## ")[0] == section
    assert rows[1][5] == rows[2][5] == "2 / 2"
    (published / "summary.csv").unlink()  # and without a summary beside it, the seeds stay unknown
    code, fourth = publish(root, "--beside", str(published))
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in
            fourth.read_text(encoding="utf-8").split("## Beside `unit-back`")[1].split("\n## ")[0].splitlines()
            if line.startswith("|") and not line.startswith("|:")]
    assert code == 0 and rows[1][5] == "2 / 2" and rows[2][5] == "—"
    # an experiment without a report is one line naming it
    run = subprocess.run([sys.executable, "-m", "nmtlib", "publish", "--results", str(results), "--out",
                          str(out), "--command", "x", "--hardware", "y", "--beside", str(root / "results" / "none")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "none/tables/findings.csv does not exist" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_the_index_sets_every_published_page_and_its_claims_side_by_side(tmp_path: Path) -> None:
    """docs/results.md, rewritten by every publish: one row per page (variants with results,
    models scored, the best variant, the verdicts counted) and the claims across pages."""
    import shutil

    root, results = reported_experiment(tmp_path, translations=True)
    code, out = publish(root, "--title", "Unit, forward")
    assert code == 0
    index = out.parent.parent / "results.md"
    assert not (out.parent / "README.md").exists()  # the pages' folder holds pages only
    first = index.read_text(encoding="utf-8")
    assert "[Unit, forward](results/unit.md)" in first and "unit-back" not in first
    # a second experiment: a copy whose first tested claim does not hold (−0.5 [−0.9, −0.1])
    back = root / "results" / "unit-back"
    shutil.copytree(results, back)
    findings = pd.read_csv(back / "tables" / "findings.csv")
    tested = findings[findings["verdict"] != "not tested"]
    claim = tested.iloc[0]["claim"]
    i = findings.index[findings["claim"] == claim][0]
    findings.loc[i, ["ours_diff", "ci_low", "ci_high", "verdict"]] = [-0.5, -0.9, -0.1, "does not hold"]
    findings.to_csv(back / "tables" / "findings.csv", index=False)
    assert main(["publish", "--results", str(back), "--out", str(out.parent / "unit-back.md"), "--command", "x",
                 "--hardware", "y"]) == 0
    text = index.read_text(encoding="utf-8")
    table = [[c.strip() for c in line.strip("|").split("|")] for line in text.split("## ")[0].splitlines()
             if line.startswith("|") and not line.startswith("|:")]
    assert table[0][:5] == ["page", "variants with results", "models scored", "best variant (test BLEU)",
                            "seed to seed (BLEU sd)"]
    summary = pd.read_csv(results / "tables" / "summary.csv")
    single = summary[summary["attention"] != "ensemble"]
    # flex-ft and base have translations (2 seeds each); flex-ft's are the references themselves: 100 BLEU
    with_results = int((single["runs"] > 0).sum())
    ensembles = int(((summary["attention"] == "ensemble") & (summary["runs"] > 0)).sum())
    assert ensembles == 1  # test_report's ensemble, scored
    assert table[1][:3] == ["[Unit, forward](results/unit.md)", f"{with_results} of {len(single)}, 1 ensemble",
                            str(int(single["runs"].sum()))]
    assert table[1][3] == "flex-ft: 100.00 ± 0.00 (2 seeds)"
    # the seeds' spread: every variant of several seeds, its variance weighted by its runs − 1
    several = summary[(summary["runs"] > 1) & summary["bleu_before_unk_replace_sd"].notna()]
    weights = several["runs"] - 1
    sd = (weights * several["bleu_before_unk_replace_sd"] ** 2).sum() / weights.sum()
    assert table[1][4] == f"{sd ** 0.5:.2f} ({weights.sum()} df)"
    verdicts = findings["verdict"].value_counts()
    assert table[2][0] == "[Reference results: unit-back](results/unit-back.md)"
    assert table[2][5].split(" / ")[:2] == [str(verdicts.get("holds", 0)), str(verdicts.get("does not hold", 0))]
    matrix = [[c.strip() for c in line.strip("|").split("|")] for line in text.split("## The papers' claims")[1]
              .splitlines() if line.startswith("|") and not line.startswith("|:")]
    assert matrix[0] == ["claim", "unit", "unit-back"]
    row = next(r for r in matrix if r[0] == claim)
    assert row[2] == "does not hold: -0.50 [-0.90, -0.10]"
    assert row[1].startswith(tested.iloc[0]["verdict"])
    assert len(matrix) - 1 == len(tested)  # every claim tested by either page, once


def test_a_claim_worded_per_direction_is_one_claim_across_experiments(tmp_path: Path) -> None:
    """Shu's τ = 1.2 window claim reads "under half the" scores where the paper shows that (De→En) and
    "fewer" where it does not (En→Ja): beside each other, and in the index, it is one claim with a row
    per experiment, not two claims each untested on the other side."""
    from nmtlib.report.index import beside_section, results_index

    def findings(claim: str, paper: float, ours: float, low: float, high: float) -> pd.DataFrame:
        return pd.DataFrame([{"claim": claim, "metric": "window (A vs B: change %)", "paper_diff": paper,
                              "ours_diff": ours, "ci_low": low, "ci_high": high, "verdict": "holds"}])

    deen = findings("Flexible Attention at τ = 1.2 computes under half the attention scores", -62.32, -59.53,
                    -67.55, -52.67)
    enja = findings("Flexible Attention at τ = 1.2 computes fewer attention scores", -32.79, -20.0, -25.0, -15.0)
    section = beside_section({"enja": enja, "deen": deen})
    three = beside_section({"enja": enja, "jaen": enja, "deen": deen})  # the heading and the sentence list them
    assert three[0] == "## Beside `jaen` and `deen`" and three[2].startswith("Every claim that `enja`, `jaen` or `deen` tests")
    assert section[2].startswith("Every claim that `enja` or `deen` tests")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in "\n".join(section).splitlines()
            if line.startswith("|") and not line.startswith("|:")]
    assert rows[1:] == [
        ["Flexible Attention at τ = 1.2 computes fewer attention scores", "enja", "-32.79%", "-20.00%",
         "[-25.00%, -15.00%]", "—", "holds"],
        ["", "deen", "-62.32%", "-59.53%", "[-67.55%, -52.67%]", "—", "holds"],
    ]
    pages = tmp_path / "results"
    for stem, df in (("deen", deen), ("enja", enja)):
        (pages / stem).mkdir(parents=True)
        (pages / f"{stem}.md").write_text(f"# {stem}\n", encoding="utf-8")
        df.to_csv(pages / stem / "findings.csv", index=False)
        pd.DataFrame([{"variant": "flex", "attention": "flexible", "runs": 1, "bleu_before_unk_replace": 30.0}]
                     ).to_csv(pages / stem / "summary.csv", index=False)
    text = results_index(pages).read_text(encoding="utf-8")
    matrix = [[c.strip() for c in line.strip("|").split("|")] for line in text.split("## The papers' claims")[1]
              .splitlines() if line.startswith("|") and not line.startswith("|:")]
    assert matrix == [["claim", "deen", "enja"],
                      ["Flexible Attention at τ = 1.2 computes fewer attention scores",
                       "holds: -59.53% [-67.55%, -52.67%]", "holds: -20.00% [-25.00%, -15.00%]"]]
    # the claims whose verdict changes across the pages come before the table: none here
    assert "Every claim tested by more than one experiment keeps its verdict (1 claim).\n\n| claim" in text


def test_a_run_still_going_is_published_only_when_asked_and_the_page_says_so(tmp_path: Path, capsys) -> None:
    """test_report's experiment: 6 variants of two seeds and an ensemble. With local-p's second seed
    not scored, its report finds 11 of 12 models and 1 of 1 ensemble: publishing it is refused in
    one line that says so, and nothing is written; --partial publishes it with a row saying so. A
    report of every run scored gives no such row, and a results folder reported before the record
    existed is asked to be reported again."""
    import shutil

    root = repository(tmp_path)
    results = root / "results" / "unit"
    spec = make_experiment(results)
    assert main(["report", "--spec", _spec_json(spec), "--out", str(results)]) == 0
    code, out = publish(root)
    page = out.read_text(encoding="utf-8")
    assert code == 0 and "| state |" not in page
    assert "| seeds | 2 seeds: base, global-feed, local-p, rnnsearch, flex, flex-ft (6 variants) |" in page
    out.unlink()
    shutil.rmtree(results / "scores" / "local-p" / "seed2")
    assert main(["report", "--spec", _spec_json(spec), "--out", str(results)]) == 0
    capsys.readouterr()
    code, out = publish(root)
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not out.exists()
    assert f"{results} is a run still going: 11 of 12 models and 1 of 1 ensemble scored when its report was made (" in line
    assert line.endswith("pass --partial to publish it as it stands (the page says so)")
    code, out = publish(root, "--partial")
    rows = [r for r in out.read_text(encoding="utf-8").splitlines() if r.startswith("| state |")]
    assert code == 0 and len(rows) == 1
    assert rows[0].startswith("| state | a run still going: 11 of 12 models and 1 of 1 ensemble scored when the report")
    # what each variant's numbers are the mean of, local-p's one seed apart
    assert "| seeds | 2 seeds: base, global-feed, rnnsearch, flex, flex-ft (5 variants); 1 seed: local-p |" in (
        out.read_text(encoding="utf-8"))
    (results / "report" / "progress.json").unlink()
    code, _ = publish(root, "--partial")
    assert code == 2 and "progress.json does not exist (an older nmtlib report)" in capsys.readouterr().err


def test_publish_before_the_report_is_a_one_line_error(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "nmtlib", "publish", "--results", str(tmp_path / "none"),
                          "--out", str(tmp_path / "x.md"), "--command", "c", "--hardware", "h"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "run the experiment's report first" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_findings_of_an_older_report_are_refused(tmp_path: Path, capsys) -> None:
    """findings.csv without intervals (the report before them) cannot give the page's findings."""
    root, results = reported_experiment(tmp_path)
    path = results / "tables" / "findings.csv"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(",".join(line.split(",")[:3]) for line in lines) + "\n", encoding="utf-8")
    code, out = publish(root)
    assert code == 2 and not out.exists()
    assert "run the experiment's report again" in capsys.readouterr().err


def test_the_page_says_which_tokens_its_scores_count(tmp_path: Path) -> None:
    """small_parallel_enja's Japanese keeps the corpus's own segmentation (KyTea's), not Moses': the
    page says which tokens BLEU counts, from the preprocess record a trained model keeps."""
    import torch

    root, results = reported_experiment(tmp_path)
    code, out = publish(root)
    assert code == 0 and "| tokens |" not in out.read_text(encoding="utf-8")  # no model records it: no row
    record = {"src_lang": "en", "tgt_lang": "ja", "src_tokenizer": "moses", "tgt_tokenizer": "none",
              "lowercase": False, "escape": False}
    torch.save({"preprocess": record}, results / "models" / "base" / "seed1" / "model.pt")
    code, out = publish(root)
    page = out.read_text(encoding="utf-8")
    (row,) = [line for line in page.splitlines() if line.startswith("| tokens |")]
    assert row == ("| tokens | target text (ja) as the corpus gives them (already tokenized; only whitespace "
                   "normalized); BLEU, RIBES and the published translations count these tokens |")
    assert "Moses-tokenized" not in page


def test_a_japanese_pages_findings_show_ribes(tmp_path: Path) -> None:
    """With Japanese on one side (the model's preprocess record), the findings table gains each
    comparison's RIBES difference and interval from findings.csv; other pairs' pages do not."""
    import torch

    root, results = reported_experiment(tmp_path)
    findings = pd.read_csv(results / "tables" / "findings.csv")
    tested = findings[findings["verdict"] != "not tested"]
    first = tested.iloc[0]["claim"]
    findings.loc[findings["claim"] == first, ["ribes_diff", "ribes_ci_low", "ribes_ci_high"]] = [-0.0123, -0.02, -0.0045]
    findings.to_csv(results / "tables" / "findings.csv", index=False)
    record = {"src_lang": "ja", "tgt_lang": "en", "src_tokenizer": "none", "tgt_tokenizer": "none",
              "lowercase": True, "escape": False}
    model = results / "models" / "base" / "seed1" / "model.pt"
    torch.save({"preprocess": record}, model)
    code, out = publish(root)
    section = out.read_text(encoding="utf-8").split("## Findings")[1].split("\n## ")[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
            if line.startswith("|") and not line.startswith("|:")]
    assert code == 0 and rows[0] == ["claim", "paper", "ours", "95% interval", "seeds", "verdict", "RIBES, ours [95%]"]
    assert rows[1][0] == first and rows[1][6] == "-0.0123 [-0.0200, -0.0045]"
    torch.save({"preprocess": {**record, "src_lang": "de"}}, model)
    code, out = publish(root)
    assert code == 0 and "RIBES, ours [95%]" not in out.read_text(encoding="utf-8")


def test_every_tokenizer_has_words_on_the_page() -> None:
    from nmtlib.data.tokenize import TOKENIZERS
    from nmtlib.report.publish import TOKENIZATION

    assert set(TOKENIZATION) == set(TOKENIZERS)


def test_sample_sentences_are_chosen_by_source_length_alone() -> None:
    from nmtlib.report.samples import markdown_text, sample_sentences

    # lengths 3 1 3 5 5: sorted 1 3 3 5 5, median 3 (first at line 0), longest 5 (first at line 3)
    assert [i for i, _ in sample_sentences(["a b c", "a", "x y z", "a b c d e", "v w x y z"])] == [0, 3]
    # an even count takes the lower median: 2 4 6 8 -> 4
    assert [i for i, _ in sample_sentences(["a b", "a b c d", "a b c d e f", "a b c d e f g h"])] == [1, 3]
    # one length: one sentence, said to be both
    assert sample_sentences(["a b", "c d"]) == [(0, "the median and the longest source, 2 words")]
    assert sample_sentences([]) == []
    assert markdown_text("a <unk> | b*c_d `e` [f] \\ &") == "a &lt;unk&gt; \\| b\\*c\\_d \\`e\\` \\[f\\] \\\\ &amp;"


def test_the_page_shows_sample_sentences_with_every_models_output(tmp_path: Path) -> None:
    """test_report's sources have 8 3 16 6 12 2 words: the lower median, 6, is line 4 and the longest
    line 3; each row is that line of the model's first seed at τ = ∞, as decoded, shown as it is."""
    root, results = reported_experiment(tmp_path, translations=True)
    base = results / "translations" / "base" / "seed1" / "test.beam5.txt"
    lines = base.read_text(encoding="utf-8").splitlines()
    lines[3] = "A <unk> | C*D"
    base.write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
    code, out = publish(root)
    assert code == 0
    section = out.read_text(encoding="utf-8").split("### Sample translations")[1].split("\n## ")[0]
    tables = re.findall(r"^Line (\d+) \(([^)]*)\):\n\n((?:\|.*\n)+)", section, re.M)
    assert [(n, why) for n, why, _ in tables] == [("4", "median source length, 6 words"),
                                                  ("3", "the longest source, 16 words")]

    def rows(table: str) -> list[list[str]]:
        return [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in table.splitlines()[2:]]

    assert rows(tables[0][2]) == [["source", "a b c d e f"], ["reference", "A B C D E"],
                                  ["base", "A &lt;unk&gt; \\| C\\*D"], ["flex-ft", "A B C D E"]]
    assert rows(tables[1][2]) == [["source", "a b c d e f g h i j k l m n o p"],
                                  ["reference", "A B C D E F G H I J K L M N O"],
                                  ["base", "A B C D E F G H I J K L M N"], ["flex-ft", "A B C D E F G H I J K L M N O"]]


def test_the_beside_section_names_the_claims_whose_verdict_changes() -> None:
    """Before the side-by-side table, a reader learns which claims change verdict between the
    experiments (a claim counts where two or more test it) and how many keep theirs."""
    from nmtlib.report.index import beside_section, verdicts_compared

    verdicts = {"A": {"x": "holds", "y": "does not hold", "z": "holds"},
                "B": {"x": "holds", "y": "holds"},
                "C": {"x": "inconclusive", "y": "not tested"},  # tested once: neither changed nor kept
                "D": {"x": "not tested", "y": "not tested"},
                "E": {"x": "holds", "y": "no verdict: smoke run"}}  # a smoke run gives no verdict to differ from
    assert verdicts_compared(verdicts) == (
        "The verdict changes with the experiment for 1 claim: *A* (holds on `x` and `z`; does not hold on `y`). "
        "The other claim tested by more than one experiment keeps its verdict.")
    assert verdicts_compared({k: verdicts[k] for k in "BCD"}) == (
        "Every claim tested by more than one experiment keeps its verdict (1 claim).")
    assert verdicts_compared({k: verdicts[k] for k in "CDE"}) == ""

    def findings(verdict: str) -> pd.DataFrame:
        return pd.DataFrame([{"claim": "Dropout helps", "metric": "BLEU (A − B)", "paper_diff": 2.0,
                              "ours_diff": -1.0, "ci_low": -2.0, "ci_high": 0.5, "verdict": verdict}])

    section = beside_section({"ende": findings("inconclusive"), "deen": findings("does not hold")})
    assert section[4] == ("The verdict changes with the experiment for 1 claim: *Dropout helps* "
                          "(inconclusive on `ende`; does not hold on `deen`).")
    assert section[6].startswith("|")  # the table follows
