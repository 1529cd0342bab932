"""What Snakemake's driver costs while its jobs run: CPU seconds of the driver (``snakemake``
itself) over a run of N jobs that only wait (``sleep``), one at a time (``--cores 1``), with
Snakemake's default job rate limit and with ``--max-jobs-per-timespan`` values given.

Why: a long CPU run of this workflow has, on each core, one training running for an hour and the
other ready jobs waiting for it. The driver then only waits, but Snakemake 9.27's scheduler runs
again whenever its rate limiter's ``threading.Timer`` fires (once per timespan), and each finished
job leaves one more such timer chain behind; every pass stats every ready job's inputs. Its cost
grows over a run and is taken from the trainings' cores. A longer timespan makes every pass rarer;
the cost is that the run ends up to one timespan later (the last timers are waited for).

The jobs are ``sleep S; touch OUT``: their own processes cost a few milliseconds each, the same
for every setting; what differs is the driver. Each round also runs the same jobs with no sleep,
whose CPU (Snakemake's start, its DAG, the jobs' shells) is taken off to give what the driver
costs *while the jobs wait*, the part a long run pays by the hour. Settings alternate within each
round, so a drift in the machine's load hits them alike. CPU seconds come from ``os.wait4`` (the
driver and the job shells it reaped).

    python benchmarks/driver_overhead.py --jobs 30 --seconds 10 --rounds 2 --timespans 100/10s
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SNAKEFILE = """\
# config keys of two or more characters: Snakemake 9 refuses one-letter ones
N, S = int(config["jobs"]), float(config["seconds"])

rule all:
    input: expand("done/{i}", i=range(N))

rule wait:
    output: "done/{i}"
    shell: "sleep {S} && touch {output}"
"""

DEFAULT = "default"


def run_once(jobs: int, seconds: float, timespan: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one Snakemake run of ``jobs`` sleeping jobs on one core."""
    with tempfile.TemporaryDirectory(prefix="driver-overhead-") as tmp:
        snakefile = Path(tmp) / "Snakefile"
        snakefile.write_text(SNAKEFILE, encoding="utf-8")
        cmd = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "--directory", tmp, "--workflow-profile", "none", "--cores", "1",
               "--quiet", "all", "--config", f"jobs={jobs}", f"seconds={seconds}"]
        if timespan != DEFAULT:
            cmd += ["--max-jobs-per-timespan", timespan]
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.returncode != 0:
            raise SystemExit(f"snakemake ({timespan}) exited {proc.returncode}: {err[-2000:]}")
        return wall, usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=30, help="jobs per run (default 30)")
    ap.add_argument("--seconds", type=float, default=10.0, help="each job's sleep (default 10)")
    ap.add_argument("--rounds", type=int, default=2, help="runs of each setting, alternating (default 2)")
    ap.add_argument("--timespans", default="100/10s",
                    help="comma-separated --max-jobs-per-timespan values to compare with the default (default 100/10s)")
    ap.add_argument("--json", type=Path, help="write the runs and the medians here")
    args = ap.parse_args(argv)
    settings = [DEFAULT, *[t.strip() for t in args.timespans.split(",") if t.strip()]]
    import snakemake

    version = getattr(snakemake, "__version__", "?")
    load = os.getloadavg()
    print(f"# {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; Snakemake {version}; "
          f"{args.jobs} jobs of `sleep {args.seconds:g}` on --cores 1, {args.rounds} rounds", flush=True)
    runs: dict[str, list[tuple[float, float]]] = {s: [] for s in settings}
    no_wait: dict[str, list[tuple[float, float]]] = {s: [] for s in settings}
    for r in range(args.rounds):
        order = settings if r % 2 == 0 else settings[::-1]
        for setting in order:
            no_wait[setting].append(run_once(args.jobs, 0.0, setting))
            wall, cpu = run_once(args.jobs, args.seconds, setting)
            runs[setting].append((wall, cpu))
            print(f"round {r + 1}: {setting}: {wall:.1f} s wall, {cpu:.2f} s CPU; the same jobs without sleep: "
                  f"{no_wait[setting][-1][1]:.2f} s CPU", flush=True)
    waiting = {s: statistics.median(c for _, c in runs[s]) - statistics.median(c for _, c in no_wait[s])
               for s in settings}
    ideal = args.jobs * args.seconds
    print("\n| --max-jobs-per-timespan | wall (s), median | over the jobs' own time (s) | CPU (s), median | "
          "the same jobs without sleep (s) | CPU while the jobs wait (s) | % of a core while they wait | "
          "against the default |")
    print("|---|---|---|---|---|---|---|---|")
    medians = {}
    for setting in settings:
        wall = statistics.median(w for w, _ in runs[setting])
        cpu = statistics.median(c for _, c in runs[setting])
        idle = statistics.median(c for _, c in no_wait[setting])
        medians[setting] = {"wall_s": wall, "cpu_s": cpu, "cpu_no_wait_s": idle, "cpu_waiting_s": waiting[setting]}
        label = "100/1s (default)" if setting == DEFAULT else setting
        print(f"| {label} | {wall:.1f} | {wall - ideal:+.1f} | {cpu:.2f} | {idle:.2f} | {waiting[setting]:.2f} | "
              f"{100 * waiting[setting] / ideal:.2f} | {waiting[setting] / waiting[DEFAULT]:.2f}× |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"jobs": args.jobs, "seconds": args.seconds, "snakemake": version, "load": load,
                                         "runs": runs, "no_wait": no_wait, "medians": medians}, indent=1),
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
