#!/usr/bin/env bash
# Set-up and main job: installs the package (and the carried wheels, where there is no network),
# then runs the probes on this GPU, or renders the committed reference run without one.
set -uo pipefail
cd "$(dirname "$0")/.."
if ls .whl/*.whl >/dev/null 2>&1; then   # offline GPU box: wheels carried in .whl/
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/hb-site .whl/*.whl || exit 1
  export PYTHONPATH="/tmp/hb-site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
  python3 -m pip install -q -e . || exit 1
fi
export PYTHONUNBUFFERED=1
exec python3 -m scripts.cli run "$@"
