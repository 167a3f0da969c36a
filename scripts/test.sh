#!/usr/bin/env bash
# Set-up and CPU test suite: installs what the tests need (CPU torch pinned), then runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q torch==2.13.0 pytest "pytest-benchmark>=4" pandas seaborn scipy jinja2
python3 -m pip install -q --no-deps -e .
python3 -m pytest tests -q -p no:cacheprovider "$@"
