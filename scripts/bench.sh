#!/usr/bin/env bash
# Set-up and main job: on a GPU box installs the package with its GPU extra and runs the probes;
# without a GPU it installs only what the report needs and renders the committed reference run.
set -uo pipefail
cd "$(dirname "$0")/.."
tmp=""
if ls .whl/*.whl >/dev/null 2>&1; then   # offline GPU box: wheels carried in .whl/
  # installed into a folder of this run's own, removed when it ends (Ctrl-C and kill included)
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/hb-XXXXXX") || exit 1
  trap 'rm -rf "$tmp"' EXIT
  trap 'exit 130' INT TERM HUP
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$tmp/site" .whl/*.whl || exit 1
  # the harness too, for its pytest11 entry points (the checkout itself comes first on the path); built
  # in a copy, so the checkout gets no build/ or *.egg-info
  python3 -c 'import shutil, sys; shutil.copytree(".", sys.argv[1], symlinks=True, ignore=shutil.ignore_patterns(
      ".git", ".venv", "build", "results", ".whl*", "*.egg-info", "__pycache__", ".*cache", ".frozen", ".gpuruns"))' "$tmp/src"
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --upgrade --target "$tmp/pkg" "$tmp/src" \
    >/dev/null 2>&1 || echo "bench.sh: could not install the harness's entry points; conftest.py loads the plugin" >&2
  export PYTHONPATH="$PWD:$tmp/site:$tmp/pkg${PYTHONPATH:+:$PYTHONPATH}"
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  python3 -m pip install -q --upgrade -e ".[gpu]" ${HB_CONSTRAINTS:+-c "$HB_CONSTRAINTS"} || exit 1
else                                     # no GPU: no multi-GB CUDA torch, just the report's needs
  python3 -m pip install -q --upgrade -e . || exit 1
fi
export PYTHONUNBUFFERED=1
if [ -z "$tmp" ]; then
  exec python3 -m cudnn_hostbench.scripts.cli run "$@"
fi
python3 -m cudnn_hostbench.scripts.cli run "$@"   # not exec: the trap removes $tmp after it
