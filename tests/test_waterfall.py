"""The waterfall's arithmetic on CPU, with a fake clock: the parts come from the same rounds and
add up to the eager figure when the host is the bottleneck; a GPU-bound path shows its GPU time."""
import pytest

from cudnn_hostbench.bench.measure.core import waterfall
from cudnn_hostbench.scripts import cli


class Clock:
    """Host time advances only by what the fake calls cost; a sync waits for the fake GPU queue."""

    def __init__(self):
        self.t = 0.0
        self.gpu_free = 0.0

    def __call__(self):
        return self.t

    def call(self, host_us, gpu_us=0.0):
        def fn():
            self.t += host_us * 1e-6
            self.gpu_free = max(self.gpu_free, self.t) + gpu_us * 1e-6
        return fn

    def sync(self):
        self.t = max(self.t, self.gpu_free)


def test_host_bound_parts_add_up_to_eager():
    c = Clock()
    floor, bare = c.call(4.0, 2.0), c.call(7.0, 2.0)
    p = waterfall.Path("naive", c.call(10.0, 2.0), bare=bare, floor=floor, replay=lambda: 2.0)
    res = waterfall.measure([p], c.sync, rounds=5, clock=c)
    med = waterfall.medians(res["naive"])
    assert med["integration"] == pytest.approx(3.0) and med["frontend"] == pytest.approx(3.0)
    assert med["engine"] == pytest.approx(4.0) and med["gpu_exposed"] == 0.0 and med["gpu"] == 2.0
    ok, share = waterfall.check(med)
    assert ok and share == pytest.approx(1.0, abs=0.02)
    assert all(len(v) == 5 for v in res["naive"].values())


def test_gpu_bound_path_shows_its_gpu_time_and_shared_callables_run_once_per_round():
    c = Clock()
    seen = []
    full = c.call(3.0, 40.0)

    def counted():
        seen.append(1)
        full()
    torch_like = waterfall.Path("torch_mm", counted, replay=lambda: 40.0)
    other = waterfall.Path("again", counted, replay=lambda: 40.0)   # the same callable
    res = waterfall.measure([torch_like, other], c.sync, rounds=3, clock=c)
    med = waterfall.medians(res["torch_mm"])
    assert med["engine"] == pytest.approx(3.0) and med["integration"] == 0 and med["frontend"] == 0
    assert med["gpu_exposed"] == pytest.approx(37.0)
    ok, share = waterfall.check(med)
    assert ok, share
    assert res["again"]["eager"] == res["torch_mm"]["eager"]


def test_check_flags_parts_that_do_not_sum():
    med = {"eager": 10.0, "integration": 1.0, "frontend": 1.0, "engine": 5.0, "gpu_exposed": 0.0}
    assert waterfall.check(med) == (False, pytest.approx(0.7))


def _run(tmp_path, parts, name="run.json"):
    from cudnn_hostbench.bench.measure.runfile import records
    from cudnn_hostbench.bench.measure.runfile.records import Record
    recs = []
    for path, figs in parts.items():
        for fig, v in figs.items():
            recs.append(Record("waterfall", f"{path}.{fig}", "256", "host", role="info", unit="us/call",
                               samples=[v, v * 1.01, v * 0.99], calls_per_round=1))
    doc = records.run_document(recs, {"gpu_name": "NVIDIA H200", "cudnn_frontend": "1.32.0"})
    return records.write_run(tmp_path / name, doc)


def test_report_renders_table_and_chart_from_a_run_file(tmp_path, capsys):
    good = {"eager": 29.0, "host": 28.5, "gpu": 2.6, "integration": 13.0, "frontend": 9.0, "engine": 6.5,
            "gpu_exposed": 0.0}
    bad = {**good, "integration": 2.0}
    f = _run(tmp_path, {"naive_wrapper": good, "generic": bad})
    assert cli.main(["waterfall", str(f), "--out", str(tmp_path / "out")]) == 0
    md = (tmp_path / "out" / "waterfall.md").read_text()
    assert "naive_wrapper" in md and "98.3 %" in md and "outside 10 %" in md
    assert (tmp_path / "out" / "waterfall.png").read_bytes()[:4] == b"\x89PNG"


def test_report_refuses_a_run_without_waterfall_records_in_one_line(tmp_path, capsys):
    f = _run(tmp_path, {})
    assert cli.main(["waterfall", str(f)]) == 2
    assert cli.main(["waterfall", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and all(line.startswith("hostbench waterfall: ") for line in err)
