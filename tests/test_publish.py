"""``nmtlib publish``: the reference-results page of an experiment, from its real report outputs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from PIL import Image

from nmtlib.cli import main
from test_report import _spec_json, make_experiment


def test_results_page_from_an_experiments_outputs(tmp_path: Path) -> None:
    results = tmp_path / "results" / "unit"
    spec = make_experiment(results)
    assert main(["report", "--spec", _spec_json(spec), "--out", str(results)]) == 0
    # base, seed 1: the trainer's clock at each epoch end; its job's last attempt resumed and used 90 s of CPU
    (results / "models" / "base" / "seed1" / "train_log.csv").write_text(
        "epoch,step,lr,train_ppl,dev_ppl,target_tokens_per_s,elapsed_s\n"
        "1,100,0.003,61,70,1000,41.0\n2,200,0.003,31,45,1000,82.0\n3,300,0.003,21,36.6667,1000,123.4\n",
        encoding="utf-8")
    logs = tmp_path / "logs" / "unit"
    bench = logs / "benchmark" / "train_model" / "base.seed1.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\th:m:s\tmax_rss\tcpu_time\n60.0\t0:01:00\t500\t90.0\n", encoding="utf-8")
    (logs / "train_model").mkdir()
    (logs / "train_model" / "base.seed1.log").write_text("[train] resuming from x/last.pt: epoch 2\n")
    (logs / "train_model" / "local-p.seed1.log").write_text("base epoch 1: 100%\n")
    out = tmp_path / "docs" / "results" / "unit.md"
    assert main(["publish", "--results", str(results), "--logs", str(logs), "--out", str(out),
                 "--command", "snakemake --cores 2", "--hardware", "2 test cores"]) == 0
    page = out.read_text(encoding="utf-8")
    assert page.startswith("# Reference results: unit")
    assert "| command | `snakemake --cores 2` |" in page and "| hardware | 2 test cores |" in page
    # base, seed 1: dev ppl 70, 45, 36.67; the last epoch lowered the best before it (45) by
    # (45 − 36.67) / 45 = 18.5%; the trainer's clock ended at 123.4 s = 2.1 min; 90 s = 1.5 min of CPU
    assert "| base | seed1 | 3 | 3 | 36.67 | 18.5% | 2.1 min | 1.5 min | yes |" in page
    local_p = next(line for line in page.splitlines() if line.startswith("| local-p | seed1 |"))
    assert "| no |" in local_p  # its job log has no resume
    for heading in ("## Findings", "## Summary", "### Shu & Nakayama 2017, Table 1", "## Figures"):
        assert heading in page, heading
    # a paper table no variant regenerates a row of is named, not printed
    assert "### Luong et al. 2015, Table 3" not in page
    assert "No variant of this experiment regenerates a row of: luong_table3." in page
    for name in ("learning_curves", "bleu_by_length", "window_tradeoff"):
        png = out.parent / "unit" / f"{name}.png"
        assert f"![{name}](unit/{name}.png)" in page
        with Image.open(png) as im:
            assert im.width <= 900


def test_publish_before_the_report_is_a_one_line_error(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "nmtlib", "publish", "--results", str(tmp_path / "none"),
                          "--out", str(tmp_path / "x.md"), "--command", "c", "--hardware", "h"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "run the experiment's report first" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
