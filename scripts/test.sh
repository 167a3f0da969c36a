#!/usr/bin/env bash
# Set-up and CPU test suite: installs what the tests need (CPU torch pinned), lints, then runs the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q torch==2.13.0 pytest "pytest-benchmark>=4" pandas seaborn scipy jinja2 packaging ruff==0.17.6
python3 -m pip install -q --no-deps -e .
python3 -m ruff check .   # lint first: configured in pyproject.toml, noqa markers included (RUF100)
python3 -m pytest tests -q -p no:cacheprovider "$@"
