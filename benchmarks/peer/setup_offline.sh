#!/usr/bin/env bash
# Install the peer, OpenNMT-py 3.5.1, on a machine with no network (the lent GPU machines), from
# wheels downloaded elsewhere, on top of that machine's own torch.
#
#   bash benchmarks/peer/setup_offline.sh WHEEL_DIR          # into $PEER, default $HOME/.cache/nmtlib-peer
#
# WHEEL_DIR holds OpenNMT_py-3.5.1, configargparse and pyonmttok wheels for that machine's python
# (see benchmarks/README.md for the pip download line). OpenNMT-py imports all its data-transform
# plugins at start-up; four of them need libraries that are not installed (spacy, fasttext,
# rapidfuzz, pyahocorasick: 80 MB of wheels) and the benchmark config uses no transform, so those
# four plugin files are removed from the installed package. The model, trainer and translator
# are untouched.
set -euo pipefail
WHEELS="${1:?usage: setup_offline.sh WHEEL_DIR}"
PEER="${PEER:-$HOME/.cache/nmtlib-peer}"
# the machine's python3 is itself a virtualenv, whose packages a nested venv would not see: the peer
# goes into its own folder, and $PEER/venv/bin/python is a launcher that puts it on the path
mkdir -p "$PEER/site" "$PEER/venv/bin"
python3 -m pip install -q --no-index --no-deps --target "$PEER/site" "$WHEELS"/OpenNMT_py-*.whl \
    "$WHEELS"/configargparse-*.whl "$WHEELS"/pyonmttok-*.whl
printf '#!/bin/sh\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec %s "$@"\n' "$PEER/site" "$(command -v python3)" \
    > "$PEER/venv/bin/python"
chmod +x "$PEER/venv/bin/python"
site="$PEER/site/onmt"
for plugin in terminology clean fuzzymatch inlinetags; do
  rm -f "$site/transforms/$plugin.py"
done
TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 "$PEER/venv/bin/python" -c \
  'import onmt, onmt.bin.train, onmt.bin.translate, torch; print(f"OpenNMT-py {onmt.__version__} with torch {torch.__version__} ready")'
