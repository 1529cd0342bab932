#!/usr/bin/env bash
# What the scripts for a lent GPU machine share (device_experiment.sh, device_checks.sh): putting the
# wheels of benchmarks/device_bundle.py to use on a machine with no network. Source it for the
# functions, or run one of them: bash benchmarks/device_common.sh install_bundle WHEELS SITE
#
# Environment: PYTHON (python3), the machine's python the wheels were bundled for.

# install_bundle WHEELS SITE: the bundle's wheels (WHEELS/*.whl, not the peer's in WHEELS/peer) into
# SITE, offline; the machine's own packages stay as they are. No wheels: nothing to do.
install_bundle() {
  local wheels="${1:?install_bundle WHEELS SITE}" site="${2:?install_bundle WHEELS SITE}"
  if compgen -G "$wheels/*.whl" > /dev/null; then
    "${PYTHON:-python3}" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$site" "$wheels"/*.whl
  fi
}

# use_bundle SITE: SITE's packages and console scripts before the machine's
use_bundle() {
  local site="${1:?use_bundle SITE}"
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" PATH="$site/bin:$PATH"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  "$@"
fi
