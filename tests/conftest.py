"""Every test runs against a temporary history store, and the suite fails if a person's default
store changed while it ran (tests/store_guard.py), or if it left anything new in the checkout or in
the temporary folder (tests/checkout.py). Under pytest-xdist (scripts/test.sh: `-n N --dist
loadgroup`) each worker checks its own session, the longest tests are handed out first, and the
pytest runs a test starts are plain ones. A test that takes over ~1.5 s on one core is marked
`@pytest.mark.slow` where it is written (a file of them: `pytestmark`), and `-m "not slow"` leaves
it out; a slow test also marked `newest_only` (pyproject.toml says when) is left out of CI's
oldest-versions pass (.ci/run). A test marked `timed` times real CPU work and judges a ratio of the
times (a line's share, a projection against its fixed step): on a 2-core box another test's load
skews it (CI failed twice under `-n 2`, each time on another of them), so scripts/test.sh leaves
such tests out of the parallel pass (`--hb-timed=skip`) and runs them alone after it
(`--hb-timed=only`)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests import checkout, store_guard

# The longest tests, longest first (seconds on one core): moved to the front of the collection so that
# pytest-xdist hands them out first and the rest fill in around them.
FIRST = (
    "tests/test_verdict_check.py",                                                           # ~75 (one worker)
    "tests/test_history_store.py::test_export_round_trip",                                 # ~25 each
    "tests/test_dashboard.py::test_the_whole_committed_history_leads_with_its_newest_run_and_says_how_little_history_it_has",
    "tests/test_nightly_recipe.py::test_runs_since_the_nightly_recipe_get_no_verdict_from_it",  # ~20
    "tests/test_narrow_output.py::test_every_width_from_60_fits_and_cuts_nothing",          # ~18
    "tests/test_scannable_output.py::test_long_commands_show_progress_only_on_a_terminal",  # 5-16 each
    "tests/test_walks.py::test_a_store_through_the_check_to_its_verdicts_enters_each_file_once",  # 12
    "tests/test_charts.py::test_the_dashboard_judges_the_run_history_check_latest_names",   # 9
    "tests/test_audit.py::test_audit_keeps_going_when_capture_fails",                      # 8
    "tests/test_charts.py::test_committed_dashboards_match_the_code",                      # 6
)


def pytest_addoption(parser):
    parser.addoption("--hb-timed", choices=("all", "skip", "only"), default="all",
                     help="the tests marked timed: run with the rest (all), leave them out (skip), or "
                          "run them alone (only)")


# Groups of tests one worker runs, one after another, so that what they share is computed once: a
# file (its module fixture) or tests of several files (a per-process cache of tests/history_store.py,
# such as the committed history's dashboard). (pytest-xdist's own `xdist_group` mark no longer reaches
# its scheduler under pytest 9, so the scheduler below groups them; the mark stays on
# test_verdict_check.py for the pytest versions it does.)
TOGETHER = (
    ("tests/test_verdict_check.py",),
    ("tests/test_charts.py::test_committed_dashboards_match_the_code",
     "tests/test_dashboard.py::test_the_whole_committed_history_leads_with_its_newest_run_and_says_how_little_history_it_has",
     "tests/test_scannable_output.py::test_history_dashboard_names_a_run_file_only_while_its_bytes_are_the_stored_ones"),
    # the committed history's dashboard sections (test_charts.py's module fixtures: ~6 s each)
    ("tests/test_charts.py::test_the_dashboard_judges_the_run_history_check_latest_names",
     "tests/test_charts.py::test_the_version_view_uses_each_versions_newest_full_run",
     "tests/test_charts.py::test_trends_show_the_judged_measurement_version_spread_across_the_axis",
     "tests/test_charts.py::test_round_ratios_come_from_the_judged_runs_file_or_say_whose_they_are",
     "tests/test_charts.py::test_a_rerendered_page_is_byte_identical"),
    # files and tests that share a module fixture of seconds (A/B jobs run, a store ingested, a site drawn)
    ("tests/test_ab_dashboard.py",),
    ("tests/test_ab_store.py",),
    ("tests/test_truthful_output.py",),
    ("tests/test_dashboard.py::test_site_is_one_file_with_nothing_fetched", "tests/test_dashboard.py::test_site_content",
     "tests/test_dashboard.py::test_trust_marks_are_counts_that_expand"),
    ("tests/test_dashboard.py::test_first_screen_leads_with_the_verdicts",
     "tests/test_dashboard.py::test_history_dashboard_in_chromium_is_one_screen_wide"),
)


def pytest_configure(config):
    if config.pluginmanager.hasplugin("xdist"):   # not in `-p no:xdist` runs: the hook is xdist's
        config.pluginmanager.register(_Scheduling(), "hostbench-tests-scheduling")


class _Scheduling:
    @staticmethod
    def pytest_xdist_make_scheduler(config, log):
        if config.getvalue("dist") not in ("load", "loadgroup"):
            return None
        from xdist.scheduler import LoadScopeScheduling

        class Scheduling(LoadScopeScheduling):
            """Each test a unit of work, as `--dist load`, but a TOGETHER group's tests one unit."""

            def _split_scope(self, nodeid: str) -> str:
                return next((group[0] for group in TOGETHER if any(_named(nodeid, e) for e in group)), nodeid)

        return Scheduling(config, log)


def _named(nodeid: str, entry: str) -> bool:
    return nodeid == entry or nodeid.startswith(entry + ("[" if "::" in entry else "::"))


def pytest_ignore_collect(collection_path, config):
    """`--hb-timed=only` imports only the files whose text marks a test timed: importing every other
    test file (torch, pandas, matplotlib, the store) took ~4.5 s of a pass that runs a few tests."""
    if config.getoption("--hb-timed") != "only" or collection_path.suffix != ".py" \
            or not collection_path.name.startswith("test_"):
        return None
    return True if "mark.timed" not in collection_path.read_text(encoding="utf-8") else None


@pytest.hookimpl(tryfirst=True)   # before -m reads the marks
def pytest_collection_modifyitems(config, items):
    loose = [i.nodeid for i in items if i.get_closest_marker("newest_only") and not i.get_closest_marker("slow")]
    if loose:   # .ci/run's oldest pass leaves out `slow and newest_only`: the mark alone would do nothing
        raise pytest.UsageError("marked newest_only but not slow: " + ", ".join(loose))
    want = config.getoption("--hb-timed")
    if want != "all":
        is_timed = [item.get_closest_marker("timed") is not None for item in items]
        timed = [item for item, t in zip(items, is_timed) if t]
        rest = [item for item, t in zip(items, is_timed) if not t]
        keep, dropped = (timed, rest) if want == "only" else (rest, timed)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep
    rank = {item.nodeid: next((i for i, e in enumerate(FIRST) if _named(item.nodeid, e)), len(FIRST))
            for item in items}
    items.sort(key=lambda item: rank[item.nodeid])   # stable: the rest keep their order


@pytest.fixture(scope="session", autouse=True)
def plain_child_pytest_runs():
    """A pytest run a test starts is not an xdist worker: pytest-benchmark turns itself off in one (and
    then refuses --benchmark-only), which it tells by these variables, inherited from this worker."""
    with pytest.MonkeyPatch.context() as mp:
        for name in [n for n in os.environ if n.startswith("PYTEST_XDIST_")]:
            mp.delenv(name)
        yield


@pytest.fixture(scope="session", autouse=True)
def temporary_history_store(tmp_path_factory):
    before = store_guard.snapshot(store_guard.default_stores())
    folder = tmp_path_factory.mktemp("default-store")
    with pytest.MonkeyPatch.context() as mp:   # subprocesses (pytest runs, the version matrix) inherit it
        mp.setenv("HOSTBENCH_STORE", store_guard.temporary_url(folder))
        yield folder
    problems = store_guard.changed(before)
    if problems:
        pytest.fail("the test suite touched a person's history store: " + "; ".join(problems), pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind(tmp_path_factory):
    """The session's temporary folder is one of its own ($TMPDIR, inherited by every command the
    tests start; pytest's tmp_path stays where pytest keeps it), empty again at the end; and the
    checkout holds nothing new. Its own folder, not /tmp: other sessions may run at the same time."""
    tmp_path_factory.getbasetemp()   # pytest's folder first, where it always is
    in_checkout = checkout.new_in_checkout()
    private = Path(tempfile.mkdtemp(prefix="hostbench-tests-"))
    private.chmod(0o711)   # the PostgreSQL server runs as `postgres` in a folder under it
    old = tempfile.tempdir
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMPDIR", str(private))
        tempfile.tempdir = str(private)
        try:
            yield private
        finally:
            tempfile.tempdir = old
    # torch keeps its per-user compile cache there on purpose, as pytest keeps its folders
    left = sorted(p.name for p in private.iterdir() if not p.name.startswith("torchinductor_"))
    shutil.rmtree(private, ignore_errors=True)
    new = sorted(checkout.new_in_checkout() - in_checkout)
    problems = ([f"left in the temporary folder: {', '.join(left)}"] if left else []) + \
               ([f"new in the checkout: {', '.join(new)}"] if new else [])
    if problems:
        pytest.fail("the test suite left debris: " + "; ".join(problems), pytrace=False)
