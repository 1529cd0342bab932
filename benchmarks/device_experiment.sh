#!/usr/bin/env bash
# Run a whole experiment of the workflow on a lent GPU machine and time it end to end (issue #30:
# multi30k-deen, every variant, its GPU jobs sharing the GPU). The workflow runs in its own process
# session, so it goes on between the device tool's calls while the machine is held; each call polls
# it, the last one packs the results. What it needs comes from benchmarks/device_bundle.py.
#
#   bash benchmarks/device_experiment.sh start CONFIGFILE... [-- KEY=VALUE...]   # install, start, return
#   bash benchmarks/device_experiment.sh poll [SECONDS]     # progress until it ends or SECONDS pass (540)
#   bash benchmarks/device_experiment.sh pack DIR           # DIR/experiment.tar.gz and DIR/timing.json
#
# KEY=VALUE pairs join the workflow's --config (after cache_dir=$DATA). Environment: WHEELS (.whl),
# DATA (benchmarks/out/device-data), STATE (/tmp/nmt-experiment), WORKDIR (where results/ and logs/
# go: the repository), PYTHON (python3), CORES (all), GPU_PCT (100 per GPU that nvidia-smi lists;
# none on a machine without one), SNAKEMAKE_ARGS (more Snakemake flags).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WHEELS="${WHEELS:-$ROOT/.whl}"
DATA="${DATA:-$ROOT/benchmarks/out/device-data}"
STATE="${STATE:-/tmp/nmt-experiment}"
WORKDIR="${WORKDIR:-$ROOT}"
PYTHON="${PYTHON:-python3}"
# shellcheck source=benchmarks/device_common.sh
. "$ROOT/benchmarks/device_common.sh"

usage() { sed -n '7,9p' "$0" >&2; exit 2; }
absolute() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }

start() {
  local configs=() pairs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do configs+=("$1"); shift; done
  [ "${1:-}" = "--" ] && { shift; pairs=("$@"); }
  [ ${#configs[@]} -gt 0 ] || usage
  for i in "${!configs[@]}"; do
    [ -f "${configs[$i]}" ] || { echo "start: no config file ${configs[$i]}" >&2; exit 2; }
    configs[$i]="$(absolute "${configs[$i]}")"
  done
  [ -d "$DATA" ] || { echo "start: no data folder $DATA (benchmarks/device_bundle.py --corpus ...)" >&2; exit 2; }
  DATA="$(cd "$DATA" && pwd)"
  if [ -e "$STATE/start" ] && [ ! -e "$STATE/end" ]; then
    echo "start: a run is already going on ($STATE); poll it" >&2; exit 2
  fi
  rm -rf "$STATE" && mkdir -p "$STATE"
  install_bundle "$WHEELS" "$STATE/site"
  local gpus=0 resources=()
  if command -v nvidia-smi > /dev/null; then gpus=$(nvidia-smi -L | grep -c '^GPU' || true); fi
  local pct="${GPU_PCT:-$((gpus * 100))}"
  [ "$pct" -gt 0 ] && resources=(--resources "gpu_pct=$pct")
  use_bundle "$STATE/site"
  mkdir -p "$WORKDIR"
  cd "$WORKDIR"
  # shellcheck disable=SC2086  # SNAKEMAKE_ARGS: flags, split on spaces
  local cmd=("$PYTHON" -m snakemake -s "$ROOT/Snakefile" --cores "${CORES:-all}" "${resources[@]}"
             --configfile "${configs[@]}" --config "cache_dir=$DATA" "${pairs[@]}" ${SNAKEMAKE_ARGS:-})
  echo "snakemake $("$PYTHON" -m snakemake --version) in $WORKDIR"
  printf '%q ' "${cmd[@]}" > "$STATE/command"
  { nvidia-smi -L 2>/dev/null || echo "no GPU"; } > "$STATE/device"
  date +%s > "$STATE/start"
  # its own session: it survives this call's end, and only this machine's return stops it
  setsid bash -c '"$@" > "$0/log" 2>&1; echo $? > "$0/rc"; date +%s > "$0/end"' "$STATE" "${cmd[@]}" \
    < /dev/null > /dev/null 2>&1 &
  echo "started: $(cat "$STATE/command")"
  echo "on: $(cat "$STATE/device")"
}

progress() {
  local now elapsed done_line
  now=$(cat "$STATE/end" 2>/dev/null || date +%s)
  elapsed=$(( now - $(cat "$STATE/start") ))
  done_line=$(grep -E '^[0-9]+ of [0-9]+ steps' "$STATE/log" 2>/dev/null | tail -n 1 || true)
  echo "$(date -u +%H:%M:%S) ${elapsed}s: ${done_line:-no step done yet}"
}

poll() {
  [ -e "$STATE/start" ] || { echo "poll: nothing started ($STATE)" >&2; exit 2; }
  local until=$(( $(date +%s) + ${1:-540} )) next=0
  # progress every 30 s; the end is noticed within a second
  while [ ! -e "$STATE/end" ] && [ "$(date +%s)" -lt "$until" ]; do
    if [ "$(date +%s)" -ge "$next" ]; then progress; next=$(( $(date +%s) + 30 )); fi
    sleep 1
  done
  progress
  if [ -e "$STATE/end" ]; then
    echo "ended: exit code $(cat "$STATE/rc"), $(( $(cat "$STATE/end") - $(cat "$STATE/start") )) s end to end"
    [ "$(cat "$STATE/rc")" = 0 ] || tail -n 30 "$STATE/log"
  else
    echo "still running"
  fi
}

pack() {
  local dir="${1:?pack DIR}"
  [ -e "$STATE/start" ] || { echo "pack: nothing started ($STATE)" >&2; exit 2; }
  mkdir -p "$dir"
  "$PYTHON" - "$STATE" > "$dir/timing.json" <<'EOF'
import json, sys
from pathlib import Path
state = Path(sys.argv[1])
read = lambda name: (state / name).read_text().strip() if (state / name).exists() else None  # noqa: E731
start, end, rc = int(read("start")), read("end"), read("rc")  # no end nor rc while it runs
print(json.dumps({
    "command": read("command"), "device": read("device"),
    "start_unix": start, "end_unix": end and int(end), "seconds": end and int(end) - start,
    "exit_code": rc and int(rc),
}, indent=2))
EOF
  cp "$STATE/log" "$dir/snakemake.log"
  # tables, figures, translations, scores, training logs, and each job's run time (Snakemake's
  # benchmark files under logs/); not the models, nor what the workflow rebuilds from the corpus
  local parts=()
  for d in results logs; do [ -d "$WORKDIR/$d" ] && parts+=("$d"); done
  [ ${#parts[@]} -eq 0 ] || tar czf "$dir/experiment.tar.gz" -C "$WORKDIR" --exclude='*.pt' \
    --exclude='results/*/corpus' --exclude='results/*/data' --exclude='results/*/attention' "${parts[@]}"
  ls -l "$dir"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  poll) shift; poll "$@" ;;
  pack) shift; pack "$@" ;;
  *) usage ;;
esac
