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
# DATA (benchmarks/out/device-data), STATE (/tmp/nmt-experiment), CORES (all), GPU_PCT (100 per GPU
# that nvidia-smi lists; none on a machine without one), SNAKEMAKE_ARGS (more Snakemake flags).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WHEELS="${WHEELS:-$ROOT/.whl}"
DATA="${DATA:-$ROOT/benchmarks/out/device-data}"
STATE="${STATE:-/tmp/nmt-experiment}"
cd "$ROOT"

usage() { sed -n '7,9p' "$0" >&2; exit 2; }

start() {
  local configs=() pairs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do configs+=("$1"); shift; done
  [ "${1:-}" = "--" ] && { shift; pairs=("$@"); }
  [ ${#configs[@]} -gt 0 ] || usage
  for f in "${configs[@]}"; do [ -f "$f" ] || { echo "start: no config file $f" >&2; exit 2; }; done
  [ -d "$DATA" ] || { echo "start: no data folder $DATA (benchmarks/device_bundle.py --corpus ...)" >&2; exit 2; }
  if [ -e "$STATE/start" ] && [ ! -e "$STATE/end" ]; then
    echo "start: a run is already going on ($STATE); poll it" >&2; exit 2
  fi
  rm -rf "$STATE" && mkdir -p "$STATE"
  if compgen -G "$WHEELS/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$STATE/site" \
      "$WHEELS"/*.whl
  fi
  local gpus=0 resources=()
  if command -v nvidia-smi > /dev/null; then gpus=$(nvidia-smi -L | grep -c '^GPU' || true); fi
  local pct="${GPU_PCT:-$((gpus * 100))}"
  [ "$pct" -gt 0 ] && resources=(--resources "gpu_pct=$pct")
  cat > "$STATE/env" <<EOF
export PYTHONPATH="$STATE/site\${PYTHONPATH:+:\$PYTHONPATH}"
export PATH="$STATE/site/bin:\$PATH"
EOF
  # shellcheck disable=SC1091
  . "$STATE/env"
  local cmd=(snakemake --cores "${CORES:-all}" "${resources[@]}" --configfile "${configs[@]}"
             --config "cache_dir=$DATA" "${pairs[@]}" ${SNAKEMAKE_ARGS:-})
  echo "snakemake $(snakemake --version); nmtlib from $(python3 -c 'import nmtlib, os; print(os.path.dirname(nmtlib.__file__))')"
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
  local until=$(( $(date +%s) + ${1:-540} ))
  while [ ! -e "$STATE/end" ] && [ "$(date +%s)" -lt "$until" ]; do
    progress
    sleep 30
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
  local end rc
  end=$(cat "$STATE/end" 2>/dev/null || echo null)
  rc=$(cat "$STATE/rc" 2>/dev/null || echo null)
  python3 - "$STATE" "$end" "$rc" > "$dir/timing.json" <<'EOF'
import json, sys
state, end, rc = sys.argv[1], sys.argv[2], sys.argv[3]
start = int(open(f"{state}/start").read())
print(json.dumps({
    "command": open(f"{state}/command").read().strip(),
    "device": open(f"{state}/device").read().strip(),
    "start_unix": start, "end_unix": None if end == "null" else int(end),
    "seconds": None if end == "null" else int(end) - start,
    "exit_code": None if rc == "null" else int(rc),
}, indent=2))
EOF
  cp "$STATE/log" "$dir/snakemake.log"
  # everything but the models and checkpoints: tables, figures, translations, scores, logs, and
  # each job's run time (Snakemake's benchmark files under logs/)
  tar czf "$dir/experiment.tar.gz" --exclude='*.pt' results logs 2>/dev/null || true
  ls -l "$dir"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  poll) shift; poll "$@" ;;
  pack) shift; pack "$@" ;;
  *) usage ;;
esac
