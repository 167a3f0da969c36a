"""pytest glue: collects probes as pytest-benchmark benchmarks whose stats are GPU-measured µs.

Each (probe, size, variant, mode) is one benchmark. The measurement happens in bench.runner,
interleaved across the probe's variants; the test then hands its samples to pytest-benchmark
through `pedantic` with an injected clock, so `--benchmark-json` stores the measured per-call
figures (not pytest-benchmark's wall time around them).
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path

import pytest

from bench import records, timing

ROOT = Path(__file__).resolve().parent


class InjectedClock:
    """A 'timer' that advances only by the externally measured seconds of each round."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


CLOCK = InjectedClock()


def pytest_addoption(parser):
    g = parser.getgroup("hostbench")
    g.addoption("--hb-sizes", default="256,1024,4096", help="cube sizes M=N=K of the matmul probes")
    g.addoption("--hb-tokens", default="256,4096", help="token counts of the transpose probe")
    g.addoption("--hb-modes", default="eager,graph,device", help="timing modes to run")
    g.addoption("--hb-rounds", type=int, default=25, help="interleaved rounds per mode")
    g.addoption("--hb-out", default=None, help="folder for records.jsonl, run.json, table.csv/md")
    g.addoption("--hb-heavy", action="store_true", help="heavy sweeps (every plan, every size)")


def _cuda_ok() -> tuple[bool, str]:
    try:
        import torch
    except ImportError as e:
        return False, f"torch not importable ({e})"
    if not torch.cuda.is_available():
        return False, ("no CUDA GPU visible (torch.cuda.is_available() is False): probes need one; "
                       "`hostbench run` renders the committed reference run instead")
    return True, ""


def pytest_configure(config):
    config.addinivalue_line("markers", "hostbench: a cudnn-hostbench probe benchmark")
    config._hb_session = None


def _session(config):
    if config._hb_session is None:
        from bench.runner import Session
        out = config.getoption("--hb-out") or str(
            ROOT / "results" / _dt.datetime.now().strftime("%Y%m%d-%H%M%S"))
        opt = timing.Options(rounds=config.getoption("--hb-rounds"))
        modes = tuple(m.strip() for m in config.getoption("--hb-modes").split(",") if m.strip()) + ("host",)
        config._hb_session = Session(out, opt, modes)
    return config._hb_session


def pytest_generate_tests(metafunc):
    if "hb_case" not in metafunc.fixturenames:
        return
    probe = metafunc.module.PROBE
    modes = {m.strip() for m in metafunc.config.getoption("--hb-modes").split(",")} | {"host"}
    cases = [c for c in probe.cases(metafunc.config) if c[2] in modes]
    metafunc.parametrize("hb_case", cases, ids=[f"{s}-{v}-{m}" for s, v, m in cases])


def pytest_collection_modifyitems(config, items):
    ok, why = _cuda_ok()
    probe_items = [it for it in items if "hb_case" in getattr(it, "fixturenames", ())]
    for it in probe_items:
        size, variant, mode = it.callspec.params["hb_case"]
        probe = it.module.PROBE
        it.add_marker(pytest.mark.benchmark(timer=CLOCK, group=f"{probe.name}[{size}]-{mode}", disable_gc=False))
        it.add_marker(pytest.mark.hostbench)
        if not ok:
            it.add_marker(pytest.mark.skip(reason=why))
    # every profiler session must come after every host-timed one (it slows host dispatch for
    # the rest of the process); a stable sort keeps each probe's order otherwise
    rank = {it: (1 if it.callspec.params["hb_case"][2] == "device" else 0) for it in probe_items}
    items.sort(key=lambda it: rank.get(it, 0))


@pytest.fixture
def hb_case(request):
    return request.param


def run_case(benchmark, request, case) -> records.Record:
    """The body every probe test shares: measure (once per probe/size), then report."""
    size, variant, mode = case
    probe = request.module.PROBE
    session = _session(request.config)
    try:
        rec = session.record(probe, size, variant, mode)
    except Exception as e:  # noqa: BLE001 - e.g. no GPU context: say why, keep the run going
        pytest.skip(f"cannot measure: {type(e).__name__}: {e}")
    return report_record(benchmark, rec, f"{probe.name}/{variant}/{size}/{mode}")


def report_record(benchmark, rec: records.Record, where: str) -> records.Record:
    """Hands a record's measured samples to pytest-benchmark (or skips/fails with its status)."""
    benchmark.extra_info.update({k: v for k, v in rec.to_dict().items() if k != "samples"})
    if rec.status.startswith("failed"):
        pytest.fail(f"{where}: {rec.status}", pytrace=False)
    if not rec.ok:
        if rec.status.startswith("error"):
            pytest.fail(f"{where}: {rec.status}", pytrace=False)
        pytest.skip(rec.status)
    scale = records.UNIT_SECONDS.get(rec.unit, 1e-6)
    it = iter(rec.samples)

    def one_round():
        CLOCK.t += next(it) * scale

    benchmark.pedantic(one_round, rounds=len(rec.samples), iterations=1, warmup_rounds=0)
    return rec


@pytest.fixture
def hb_run(benchmark, request, hb_case):
    return lambda: run_case(benchmark, request, hb_case)


def pytest_benchmark_update_machine_info(config, machine_info):
    s = config._hb_session
    if s is not None and s.fingerprint:
        machine_info["hostbench"] = s.fingerprint


def pytest_benchmark_update_json(config, benchmarks, output_json):
    s = config._hb_session
    if s is None:
        return
    output_json["hostbench"] = {
        "schema": records.SCHEMA,
        "unmeasured": [r.to_dict() for r in s.records.values() if not r.ok],
    }


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    s = session.config._hb_session
    if s is None:
        return
    path = s.finish()
    session.config._hb_run_path = path
    if path is not None:
        from reports import table
        table.write_outputs(records.load_run(path), path.parent)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    path = getattr(config, "_hb_run_path", None)
    if path is None:
        return
    from reports import table
    run = records.load_run(path)
    terminalreporter.write_sep("=", "cudnn-hostbench: µs per call against torch.mm")
    terminalreporter.write_line(table.render_text(table.build_table(run)))
    terminalreporter.write_line(f"run file: {path}  (table.csv, table.md beside it)")
    if run.fingerprint.get("cudnn_error"):
        terminalreporter.write_line(f"cuDNN was not usable, so every cuDNN variant is unsupported: "
                                    f"{run.fingerprint['cudnn_error']}", red=True)
    cal = run.fingerprint.get("calibration_us", {})
    if cal.get("after_over_before", 1) > 1.2:
        terminalreporter.write_line(
            f"note: host calibration after the profiler phase is {cal['after_over_before']:.2f}x slower "
            "than before it; host figures were all taken before it")
