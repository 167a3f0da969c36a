"""Harness core on CPU: statistics, eager timing math, fingerprint, run files, table."""
import json
import math
import time

import pytest

from cudnn_hostbench.bench.measure.core import timing
from cudnn_hostbench.bench.measure.probe import Probe, Variant
from cudnn_hostbench.bench.measure.runfile import export, fingerprint, records, stats
from cudnn_hostbench.reports import marks_text, table
from cudnn_hostbench.scripts import cli
from tests.helpers import FINGERPRINT, synthetic_records, write_synthetic_run


# -- statistics -------------------------------------------------------------------------------
def test_summarize_uses_pytest_benchmarks_quartiles():
    """One quartile rule: the table's IQR equals the run file's pytest-benchmark stats."""
    import random

    import numpy as np
    from pytest_benchmark.stats import Stats
    rng = random.Random(3)
    for n in range(1, 30):
        xs = [rng.lognormvariate(0, 0.3) for _ in range(n)]
        pb = Stats()
        for x in xs:
            pb.update(x)
        s = stats.summarize(xs)
        for k in ("median", "q1", "q3", "iqr", "min", "max", "mean"):
            assert getattr(s, k) == pytest.approx(getattr(pb, k)), (n, k)
    xs = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0]
    s = stats.summarize(xs)
    assert (s.min, s.max, s.n) == (1.0, 10.0, 6)
    assert s.stddev == pytest.approx(np.std(xs, ddof=1))


def test_summarize_drops_nan_and_handles_empty():
    assert stats.summarize([]) == stats.Summary() and not stats.summarize([])
    assert stats.summarize([]).to_dict() == {"n": 0}
    assert stats.summarize([float("nan"), 2.0]).median == 2.0


def test_paired_ratios_cancel_shared_drift():
    drift = [1.0, 1.4, 0.8, 1.2]
    a = [10 * d for d in drift]
    b = [8 * d for d in drift]
    r = stats.ratio_summary(a, b)
    assert r.median == pytest.approx(1.25) and r.iqr == pytest.approx(0.0)
    assert stats.ratio_summary(a, b[:2]) is None
    with pytest.raises(ValueError):
        stats.paired_ratios(a, b[:2])


# -- timing math on CPU callables ---------------------------------------------------------------
def test_run_calls_calls_exactly_n_times():
    for n in (0, 1, 15, 16, 17, 100):
        box = [0]

        def fn(box=box):
            box[0] += 1
        timing.run_calls(fn, n)
        assert box[0] == n


def test_eager_round_divides_by_calls_and_syncs_twice():
    clock = iter([10.0, 10.5])
    syncs = []
    per = timing.eager_round(lambda: None, 50, lambda: syncs.append(1), clock=lambda: next(clock))
    assert per == pytest.approx(0.5 / 50)
    assert len(syncs) == 2


def test_measure_eager_interleaves_and_sizes_rounds():
    order = []
    fns = {n: (lambda n=n: order.append(n)) for n in "ABC"}
    opt = timing.Options(rounds=6, warmup_rounds=1, target_round_s=1e-5, min_calls=1, max_calls=1)
    res = timing.measure_eager(fns, lambda: None, opt)
    assert all(len(res[n][0]) == 6 and res[n][1] == 1 for n in "ABC")
    tail = order[-3 * 7:]  # last 7 rounds (1 warm-up + 6), one call per variant per round
    rounds = [tail[i:i + 3] for i in range(0, len(tail), 3)]
    assert all(sorted(r) == ["A", "B", "C"] for r in rounds)
    assert len({r[0] for r in rounds}) == 3  # the starting variant rotates


def test_measure_eager_orders_a_slower_callable_slower():
    fns = {"fast": lambda: None, "slow": lambda: time.sleep(2e-4)}
    opt = timing.Options(rounds=5, warmup_rounds=1, target_round_s=2e-3, min_calls=4, max_calls=64)
    res = timing.measure_eager(fns, lambda: None, opt)
    fast = stats.summarize(res["fast"][0]).median
    slow = stats.summarize(res["slow"][0]).median
    assert slow > 150 > fast  # µs per call


def test_calls_for_clamps():
    assert timing.calls_for(1e-6, 2e-3, 16, 512) == 512
    assert timing.calls_for(2e-4, 2e-3, 16, 512) == 16
    assert timing.calls_for(2e-5, 2e-3, 16, 512) == 100
    assert timing.calls_for(0.0, 2e-3, 16, 512) == 512
    assert timing.calls_for(4e-4, 2e-3, 16, 512) == 16     # 6.4 ms a round: unchanged
    assert timing.calls_for(1e-3, 2e-3, 16, 512) == 8      # 16 ms a round would pass 8 ms ...
    assert timing.calls_for(1.6e-3, 2e-3, 16, 512) == 5    # ... these get just past it
    assert timing.calls_for(8.3e-3, 2e-3, 16, 512) == 2    # a graph rebuild per call: the fewest


def test_host_timing_refused_after_profiler(monkeypatch):
    monkeypatch.setattr(timing, "_profiled", True)
    with pytest.raises(timing.ContaminatedError):
        timing.measure_eager({"a": lambda: None}, lambda: None, timing.Options(rounds=1))
    with pytest.raises(timing.ContaminatedError):
        timing.measure_graph({}, None, timing.Options(rounds=1))


def test_device_events_sum_kernels_and_count_only_kernels():
    ev = [("nvjet_gemm", 3.0), ("Memset (Device)", 0.5), ("nvjet_gemm", 3.0), ("copy_kernel", 1.0)]
    d = timing.summarize_device_events(ev, calls=2)
    assert d.per_call_us == pytest.approx(3.75)
    assert d.kernels_per_call == pytest.approx(1.5)  # the memset is device time, not a kernel
    assert d.names["nvjet_gemm"] == 2


def test_noop_eager_floor_on_cpu_is_small():
    xs = [timing.eager_round(lambda: None, 20000, lambda: None) * 1e6 for _ in range(5)]
    assert min(xs) < 1.0  # µs; the GPU box's figure is in the reference run


# -- probes collect without a GPU -------------------------------------------------------------
def test_probe_cases_and_roles():
    p = Probe("x", "doc", [Variant("torch_mm", "baseline", "mm"), Variant("a", "trap", "a", modes=("eager",))],
              build=None, sizes=lambda cfg: ["256"])
    assert p.cases(None) == [("256", "torch_mm", "eager"), ("256", "torch_mm", "graph"),
                             ("256", "torch_mm", "device"), ("256", "a", "eager")]
    with pytest.raises(ValueError):
        Variant("b", "nonsense", "b")
    assert Variant("c", "trap", "c", ops_per_call=8).unit == "us/op"


# -- fingerprint -------------------------------------------------------------------------------
def test_fingerprint_host_fields():
    fp = fingerprint.fingerprint()
    for k in ("python", "cpu_model", "clock_source", "cudnn_env", "datetime", "torch"):
        assert k in fp
    assert fingerprint.gpu_slug({"gpu_name": "NVIDIA H200"}) == "h200"
    assert fingerprint.gpu_slug({"gpu_name": "NVIDIA B200"}) == "b200"
    assert fingerprint.gpu_slug({}) == "cpu"


def test_fingerprint_records_cudnn_env(monkeypatch):
    monkeypatch.setenv("CUDNN_LOGLEVEL_DBG", "2")
    assert fingerprint.cudnn_env()["CUDNN_LOGLEVEL_DBG"] == "2"


# -- run files -----------------------------------------------------------------------------------
def test_run_file_round_trip(tmp_path):
    recs = synthetic_records(1)
    path = records.write_run(tmp_path / "run.json", records.run_document(recs, dict(FINGERPRINT)))
    run = records.load_run(path)
    assert run.fingerprint["gpu_name"] == "NVIDIA H200"
    assert len(run.records) == len(recs)
    a = recs[0]
    b = run.find(*a.key[:3], a.mode)
    assert b.samples == pytest.approx(a.samples)
    assert b.ratio == a.ratio and b.role == a.role
    un = run.find("execute", "ordered", "256", "eager")
    assert un.status.startswith("unsupported") and not un.ok
    doc = json.loads(path.read_text())   # the engine's document: every record, samples in their unit
    assert doc["format"] == records.FORMAT and [r["samples"] for r in doc["records"]] == [r.samples for r in recs]
    exported = export.export_run(run)    # pytest-benchmark layout: stats in seconds, raw data kept
    e = exported["benchmarks"][0]
    assert e["stats"]["median"] == pytest.approx(stats.summarize(a.samples).median * 1e-6)
    assert len(e["stats"]["data"]) == len(a.samples)
    assert e["name"] == "test_execute[256-torch_mm-eager]"


def test_load_run_tolerates_unknown_and_missing_fields(tmp_path):
    path = write_synthetic_run(tmp_path / "run.json", exported=True)
    doc = json.loads(path.read_text())
    doc["benchmarks"][0]["extra_info"]["future_field"] = 42
    del doc["benchmarks"][0]["extra_info"]["kernel_names"]
    doc.pop("hostbench")
    path.write_text(json.dumps(doc))
    run = records.load_run(path)
    assert run.records[0].kernel_names == []


@pytest.mark.parametrize("content,match", [
    ('{"benchmarks": [', "not valid JSON"),
    ('{"foo": 1}', "no 'benchmarks'"),
    ('{"benchmarks": [{"extra_info": {"probe": "x"}, "params": {}}]}', "record lacks"),
    ('{"benchmarks": [7]}', "malformed"),
])
def test_corrupt_run_files_are_named(tmp_path, content, match):
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(records.RunFileError, match=match) as ei:
        records.load_run(p)
    assert str(p) in str(ei.value)
    with pytest.raises(records.RunFileError, match="cannot read"):
        records.load_run(tmp_path / "missing.json")


def test_partial_jsonl_survives_a_cut_last_line(tmp_path):
    w = records.JsonlWriter(tmp_path / "records.jsonl")
    w.write({"kind": "fingerprint", "fingerprint": FINGERPRINT})
    for r in synthetic_records(2)[:3]:
        w.write({"kind": "record", "record": r.to_dict()})
    w.close()
    with open(tmp_path / "records.jsonl", "a") as fh:
        fh.write('{"kind": "record", "rec')  # a crash mid-write
    run = records.load_run(tmp_path / "records.jsonl")
    assert len(run.records) == 3 and run.fingerprint["gpu_name"] == "NVIDIA H200"
    assert run.warnings == [f"{tmp_path / 'records.jsonl'}:5: last line is cut off (a crash mid-write?); "
                            "kept the 3 record(s) before it"]


def test_empty_run_loads_unless_records_are_needed(tmp_path):
    p = tmp_path / "records.jsonl"
    p.write_text(json.dumps({"kind": "fingerprint", "fingerprint": FINGERPRINT}) + "\n")
    assert records.load_run(p).records == []  # a run in progress: nothing measured yet
    with pytest.raises(records.NoRecordsError, match="no records in"):
        records.load_run(p, need_records=True)
    (tmp_path / "bin.json").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xff")
    with pytest.raises(records.RunFileError, match="not UTF-8"):
        records.load_run(tmp_path / "bin.json")


# -- table ----------------------------------------------------------------------------------------
def test_table_from_saved_run(tmp_path):
    run = records.load_run(write_synthetic_run(tmp_path / "run.json", seed=3))
    df = table.build_table(run)
    row = df[(df.variant == "generic") & (df["size"] == "256")].iloc[0]
    assert 1.4 < row["eager_ratio"] < 1.9          # 13/8 with noise
    assert row["host_overhead"] == pytest.approx(row["eager"] - row["device"])
    assert row["kernels_per_call"] == 1.0
    un = df[df.variant == "ordered"].iloc[0]
    assert "unsupported" in un["status"] and math.isnan(un["eager"])
    text = table.render_text(df)
    assert "generic" in text and "unsupported" in text
    csv_path, md_path = table.write_outputs(run, tmp_path)
    md = md_path.read_text()
    assert "| execute | generic | 256 |" in md and "H200" in md
    assert "eager_ratio" in csv_path.read_text().splitlines()[0]


def test_table_cli(tmp_path, capsys):
    path = write_synthetic_run(tmp_path / "run.json")
    assert cli.main(["table", str(path), "--markdown", "--out", str(tmp_path / "o")]) == 0
    assert "| execute | pinned |" in capsys.readouterr().out
    (tmp_path / "bad.json").write_text("{")
    assert cli.main(["table", str(tmp_path / "bad.json")]) == 2
    assert "bad.json" in capsys.readouterr().err


def test_table_names_baselines_and_moves_long_status_under_the_table_whole(tmp_path):
    recs = synthetic_records(4)
    long = "unsupported: " + "word " * 30
    recs.append(records.Record("execute", "raw", "256", "eager", status=long, role="private"))
    df = table.build_table(records.Run("r.json", dict(FINGERPRINT), recs))
    text = table.render_text(df, width=100)
    flat = " ".join(text.split())
    assert "×base" in text and "execute: torch_mm" in flat and "probe's baseline" in flat
    assert max(map(len, text.splitlines())) <= 100
    raw = next(line for line in text.splitlines() if line.startswith("raw "))
    note = raw.split()[-1]
    assert note.startswith("[") and "…" not in text
    assert f"{note} execute/raw/256: eager: {long.strip()}" in flat   # the whole status, wrapped
    wide = table.render_text(df, wide=True)
    assert f"eager: {long.strip()}" in wide


def test_table_figure_without_samples_has_no_ratio(tmp_path):
    recs = synthetic_records(5)
    lost = next(r for r in recs if (r.variant, r.size, r.mode) == ("generic", "256", "eager"))
    lost.samples = []  # status still "ok", ratio still set: as a run file with its data stripped
    df = table.build_table(records.Run("r.json", dict(FINGERPRINT), recs))
    row = df[(df.variant == "generic") & (df["size"] == "256")].iloc[0]
    assert row["status"] == "eager: no samples" and math.isnan(row["eager_ratio"])
    shown = table.display_frame(df)
    shown = shown[(shown.variant == "generic") & (shown["size"] == "256")].iloc[0]
    assert (shown["eager"], shown["eager ×base"], shown["status"]) == ("–", "–", "eager: no samples")


def test_table_shows_trust_marks(tmp_path, capsys):
    from cudnn_hostbench.reports import run_summary
    recs = synthetic_records(6)
    for r in recs:
        if (r.variant, r.size, r.mode) == ("pinned", "256", "eager"):
            r.flags = ["discarded", "wide_spread"]
            r.rounds_discarded = {"host_slow": 3}
        if (r.variant, r.size, r.mode) == ("generic", "256", "eager"):
            r.flags = ["discarded"]          # rounds redone: the figure is no less trustworthy
            r.rounds_discarded = {"clock_drop": 2}
    run = records.Run(str(tmp_path / "run.json"), dict(FINGERPRINT), recs)
    df = table.build_table(run)
    lines = table.render_text(df).splitlines()
    assert lines[0] == marks_text.legend({"wide_spread"})[0] and "⚑d" not in "\n".join(lines)
    i = lines.index("execute · 256")
    pinned = next(line for line in lines[i:] if line.startswith("pinned "))
    generic = next(line for line in lines[i:] if line.startswith("generic "))
    assert "⚑w" in pinned and "⚑" not in generic
    csv_path, md_path = table.write_outputs(run, tmp_path)
    md = md_path.read_text()
    assert run_summary.summary_line(run) in md and "⚑w" in md and "⚑d" not in md
    assert "5 discarded" in run_summary.summary_line(run) and "1 figure(s) flagged (1 ⚑w)" in run_summary.summary_line(run)
    head, *rows = csv_path.read_text().splitlines()
    assert "flags" in head.split(",") and "badge" not in head
    assert sum("eager: discarded,wide_spread" in r for r in rows) == 1   # the record keeps every kind
    assert sum("eager: discarded" in r for r in rows) == 2
    # `hostbench table`: the run's summary line right under the caption
    path = records.write_run(tmp_path / "flagged.json", records.run_document(recs, dict(FINGERPRINT)))
    assert cli.main(["table", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(run_summary.caption(records.load_run(path))[:40]) and "1 figure(s) flagged" in out
    assert marks_text.legend({"wide_spread"})[0] in out.splitlines()
    # no flag anywhere: no legend, no mark
    clean = table.render_text(table.build_table(records.Run("r.json", dict(FINGERPRINT), synthetic_records(6))))
    assert "⚑" not in clean


def test_plain_pytest_benchmark_entries_load(tmp_path):
    doc = {"benchmarks": [{"name": "test_foo[a]", "param": "a", "params": {"x": "a"},
                           "stats": {"data": [1e-6, 2e-6]}, "extra_info": {}}]}
    p = tmp_path / "plain.json"
    p.write_text(json.dumps(doc))
    r = records.load_run(p).records[0]
    assert (r.probe, r.variant, r.size, r.mode) == ("foo", "a", "-", "eager")
    assert r.samples == pytest.approx([1.0, 2.0])


def test_eager_rounds_stop_once_every_median_is_known_well_enough(monkeypatch):
    """--hb-target-se: a quiet pair of variants stops after min_rounds; a noisy one runs all
    `rounds`; 0 (the default) always runs them all."""
    import random
    rng = random.Random(1)
    noise = {"quiet": 0.002, "noisy": 0.2}

    def fake_round(fn, n, sync, clock=None):
        return fn()

    monkeypatch.setattr(timing, "eager_round", fake_round)
    for kind, want in (("quiet", 8), ("noisy", 24)):
        fns = {n: (lambda k=kind: 1e-5 * (1 + rng.gauss(0, noise[k]))) for n in "AB"}
        opt = timing.Options(rounds=24, warmup_rounds=1, target_round_s=1e-5, min_calls=1, max_calls=1,
                             target_se=0.01)
        res = timing.measure_eager(fns, lambda: None, opt)
        assert all(len(res[n][0]) == want for n in "AB"), (kind, len(res["A"][0]))
    res = timing.measure_eager({"A": lambda: 1e-5}, lambda: None,
                               timing.Options(rounds=12, warmup_rounds=1, min_calls=1, max_calls=1))
    assert len(res["A"][0]) == 12
    assert timing.median_se([1.0, 1.0, 1.0]) == float("inf") and timing.median_se([1.0] * 8) == 0.0


def test_device_rows_whose_few_rounds_spread_get_more_rounds(monkeypatch):
    """Graph and device rows are measured on one process a run: three profiler rounds that agree
    stand; a variant whose rounds spread past DEVICE_SPREAD gets device_more rounds (for every
    variant of the block, in the same interleaved cycles)."""
    def run(values):
        it = {n: iter(v) for n, v in values.items()}
        monkeypatch.setattr(timing, "run_calls", lambda fn, n: None)
        monkeypatch.setattr(timing, "profile_calls", lambda fn, n, sync, during=None: timing.DeviceSample(
            per_call_us=next(it[fn()]), kernels_per_call=1.0))
        fns = {n: (lambda n=n: n) for n in values}
        return timing.measure_device(fns, lambda: None, timing.Options(device_rounds=3, device_more=6))

    quiet = run({"A": [10.0, 10.05, 9.98], "B": [20.0, 20.1, 20.0]})
    assert [len(quiet[n]) for n in "AB"] == [3, 3]
    spread = run({"A": [170.8, 185.1, 176.8, *[171.0] * 6], "B": [171.4] * 9})
    assert [len(spread[n]) for n in "AB"] == [9, 9]
    assert timing.device_spread(spread["A"][:3]) > timing.DEVICE_SPREAD > timing.device_spread(quiet["A"])
