#!/usr/bin/env bash
# Set-up and CPU test suite: installs what the tests need (a CPU torch, the package with its test
# extra), lints, then runs the tests, type-checking the typed core (mypy) beside them. Upgrades what is
# installed to the newest versions that resolve (what a new user gets); `--oldest` installs the
# oldest versions pyproject.toml allows (ci/oldest.txt) instead. Other arguments go to pytest.
# The tests run in HB_TEST_WORKERS pytest-xdist workers (default: the CPU count, at most 4; 0 runs
# them in this process); `-m "not slow"` leaves out the slow ones (each marked `@pytest.mark.slow`
# where it is written). The tests that time real CPU work and judge a ratio (`@pytest.mark.timed`)
# run after the rest, alone, so the other workers' load does not skew them.
# HB_TEST_LINT=0 leaves out ruff and mypy (.ci/run runs them once, in its newest-versions pass).
set -euo pipefail
cd "$(dirname "$0")/.."
pins=()
if [ "${1:-}" = "--oldest" ]; then
  shift
  pins=(-c ci/oldest.txt)
fi
# pip as the venv made it (no upgrade of pip itself: nothing below needs a newer one, and it is a
# download and install on every fresh venv); torch==2.13.0: a CPU build (a bare `torch` can pull a multi-GB CUDA build).
# --no-compile: pip byte-compiles each installed file in turn, most of a fresh venv's install (70 s
# against 30 s on 2 cores). Python writes the bytecode of what the tests import as they first import
# it instead, a third of the files (compileall of them all: 26 s more on 2 cores); where
# PYTHONDONTWRITEBYTECODE is set it would write none and every test process would compile its
# imports again (pytest's rewritten test files too), so it is unset here.
python3 -m pip install -q --no-compile --upgrade --upgrade-strategy eager "${pins[@]}" torch==2.13.0 -e ".[test]"
unset PYTHONDONTWRITEBYTECODE
python3 -m pip list --format=freeze 2>/dev/null | grep -iE '^(pytest|pytest-benchmark|pandas|numpy|scipy|matplotlib|seaborn|jinja2|packaging|torch|mypy)==' | tr '\n' ' '; echo
typed=0 mypy_pid=""
if [ "${HB_TEST_LINT:-1}" != 0 ]; then
  python3 -m ruff check .   # lint first: configured in pyproject.toml, noqa markers included (RUF100)
  # mypy, the typed core (bench/measure, reports: [tool.mypy] in pyproject.toml), on one core beside
  # the parallel pass, whose workers leave a core idle at times (a test waiting on a process or a
  # browser: 34 of its 523 core-seconds on 2 cores). Its report follows the pass's.
  mypy_out=$(mktemp)
  # its cache, seen before the tests' debris check reads the checkout (tests/checkout.py): git does
  # not list an empty folder, so the file mypy itself writes there goes in first
  mkdir -p .mypy_cache && [ -e .mypy_cache/.gitignore ] || printf '# Automatically created by mypy\n*\n' > .mypy_cache/.gitignore
  python3 -m mypy > "$mypy_out" 2>&1 & mypy_pid=$!
  trap 'kill "$mypy_pid" 2>/dev/null || true; rm -f "$mypy_out"' EXIT
fi
workers=${HB_TEST_WORKERS:-$(n=$(nproc 2>/dev/null || echo 1); echo $((n < 4 ? n : 4)))}
rest=0 timed=0
python3 -m pytest tests -q -p no:cacheprovider -n "$workers" --dist loadgroup --hb-timed=skip "$@" || rest=$?
if [ -n "$mypy_pid" ]; then   # done before the timed tests, which run alone
  wait "$mypy_pid" || typed=$?
  cat "$mypy_out"
fi
python3 -m pytest tests -q -p no:cacheprovider -p no:xdist --hb-timed=only "$@" || timed=$?
[ "$rest" = 5 ] && [ "$timed" = 0 ] && rest=0     # 5: the arguments selected no test in that pass
[ "$timed" = 5 ] && [ "$rest" = 0 ] && timed=0
exit $((rest != 0 ? rest : typed != 0 ? typed : timed))
