#!/usr/bin/env bash
# Install the peer toolkit, OpenNMT-py 3.5.1, into its own virtualenv OUTSIDE this repository,
# exactly as /work/shared/docs/PEER-OPENNMT.md (shared/docs/PEER-OPENNMT.md) records it.
# The peer is never a dependency of nmtlib: only benchmarks/peer_opennmt.py calls it, through
# the venv's python in a subprocess.
#
#   bash benchmarks/peer/setup_opennmt.sh            # into $PEER, default $HOME/.cache/nmtlib-peer
#   PEER=/scratch/peer bash benchmarks/peer/setup_opennmt.sh
#
# Why --no-deps: every OpenNMT-py 3.x pins torch >=2.1,<2.3; a plain install next to torch 2.13
# resolves to 3.0.4. 3.5.1 runs on torch 2.13 once its other requirements are installed by hand.
set -euo pipefail

PEER="${PEER:-$HOME/.cache/nmtlib-peer}"
PYTHON="${PYTHON:-python3}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"

REPO_DIR="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$PEER"
PEER="$(cd "$PEER" && pwd)"
case "$PEER/" in
  "$REPO_DIR/"*) echo "PEER=$PEER is inside the repository; choose a folder outside it" >&2; exit 2 ;;
esac

if [ ! -x "$PEER/venv/bin/python" ]; then
  "$PYTHON" -m venv "$PEER/venv"
fi
# shellcheck disable=SC1091
. "$PEER/venv/bin/activate"
pip install "torch==${TORCH_VERSION}"
pip install --no-deps "OpenNMT-py==3.5.1"
pip install configargparse "ctranslate2>=4,<5" "tensorboard>=2.3" flask waitress \
    "pyonmttok>=1.37,<2" pyyaml sacrebleu rapidfuzz pyahocorasick fasttext-wheel spacy six "torch==${TORCH_VERSION}"

# smoke check: the entry points import under this torch
TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 python - <<'PY'
import onmt, torch
print(f"OpenNMT-py {onmt.__version__} with torch {torch.__version__} ready")
PY
echo "peer venv: $PEER/venv  (benchmarks/peer_opennmt.py finds it through \$PEER or this default)"
