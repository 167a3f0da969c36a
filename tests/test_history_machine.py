"""Machine identity in the history store: each run's start, GPU and the probes it held are stored,
exported and ingested again; the committed export knows the start of every committed run; plan
rules are stored (and inferred for old runs); the check says which scale judged a row."""
from __future__ import annotations

import json
import math
import types
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure import records
from cudnn_hostbench.reports.history import check, db, ingest, noise, plans
from cudnn_hostbench.scripts import cli
from tests.helpers import FINGERPRINT, synthetic_records

ROOT = Path(__file__).resolve().parents[1]
EXPORT = ROOT / "reports" / "reference" / "h200" / "history.hbx.jsonl.gz"
MACHINE = {"gpu_uuid": "GPU-1234", "gpu_serial": "1650", "vbios": "96.00", "pci_bus_id": "00000000:19:00.0",
           "power_limit_w": 700.0, "max_sm_clock_mhz": 1980, "max_mem_clock_mhz": 2619,
           "boot_id": "b00t", "hostname": "vm"}


def _run(path: Path, seed: int, machine: dict | None = None, rule: str = "") -> Path:
    recs = synthetic_records(seed)
    for r in recs:
        r.plan_rule = rule if r.variant == "pinned" else ""
        r.plan = "plan 1 'eng7_k24=41'" if r.variant == "pinned" else ""
    fp = {**FINGERPRINT, "datetime": f"2026-12-0{seed + 1}T00:00:00+00:00"}
    if machine:
        fp["machine"] = machine
    return records.write_run(path, records.run_document(recs, fp))


def test_a_run_s_machine_and_probes_are_stored_and_travel_in_the_export(tmp_path):
    st = db.open_store(f"sqlite:///{tmp_path / 'a.db'}", create=True)
    ingest.ingest_paths(st, [_run(tmp_path / "r.json", 0, MACHINE, rule="autotuned")])
    r = st.runs()[0]
    assert r["start"] == "b00t/GPU-1234" and r["gpu_uuid"] == "GPU-1234" and r["probes"] == "execute"
    assert json.loads(r["machine_json"])["power_limit_w"] == 700.0
    figs = st.figures([r["id"]])[r["id"]]
    pinned = [f for f in figs.values() if f.variant == "pinned"]
    assert pinned and all(f.plan_rule == "autotuned" and f.plan.startswith("plan 1") for f in pinned)
    ingest.export(st, tmp_path / "x.hbx.jsonl.gz")
    st2 = db.open_store(f"sqlite:///{tmp_path / 'b.db'}", create=True)
    ingest.ingest_paths(st2, [tmp_path / "x.hbx.jsonl.gz"])
    r2 = st2.runs()[0]
    assert {k: r2[k] for k in ("start", "gpu_uuid", "machine_json", "probes")} == \
           {k: r[k] for k in ("start", "gpu_uuid", "machine_json", "probes")}
    assert [f.plan_rule for f in st2.figures([r2["id"]])[r2["id"]].values() if f.variant == "pinned"] == \
           [f.plan_rule for f in pinned]
    st.close()
    st2.close()


def test_a_run_without_identity_is_an_unknown_start_of_its_own(tmp_path):
    st = db.open_store(f"sqlite:///{tmp_path / 'a.db'}", create=True)
    ingest.ingest_paths(st, [_run(tmp_path / "a.json", 0), _run(tmp_path / "b.json", 1)])
    a, b = st.runs()
    assert a["start"] == b["start"] == "" and noise.start_of(a) != noise.start_of(b)
    assert not noise.same_machine(a, b)
    st.close()


def test_old_runs_take_the_plan_rule_their_probe_declared_where_it_names_a_race():
    assert plans.inferred(1, "execute", "pinned") == "autotuned"          # version 1: autotuned pin
    assert plans.inferred(2, "execute", "pinned") == ""                   # version 2: the heuristic's plan
    assert plans.inferred(2, "registration", "custom_op_autograd") == "autotuned"
    assert plans.inferred(2, "wrapper", "fixed_autotuned") == "autotuned"
    assert plans.inferred(3, "churn", "reuse") == ""                      # new runs record their own
    assert plans.is_race("autotuned") and not plans.is_race("heuristic")


def test_the_committed_export_knows_every_run_s_start():
    st = db.open_store("sqlite:///:memory:", create=True)
    ingest.ingest_paths(st, [EXPORT])
    rs = st.runs()
    # runs before measurement 3 took their start from the log; later ones record it (boot id/GPU UUID)
    assert all(r["start"].startswith("log:") for r in rs if r["measurement_version"] < 3)
    v3 = [r for r in rs if r["measurement_version"] == 3]
    assert len(v3) == 28 and all(r["start"] == f"{r['start'].split('/')[0]}/{r['gpu_uuid']}" for r in v3)
    assert sorted(sum(r["start"] == s for r in v3) for s in {r["start"] for r in v3}) == \
        [1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3]
    assert len({r["gpu_uuid"] for r in v3}) == 14       # each start on its own GPU
    full_v1 = [r for r in rs if r["n_figures"] >= 400 and r["measurement_version"] == 1]
    by: dict = {}
    for r in full_v1:
        by.setdefault(r["start"], []).append(r)
    assert len(full_v1) == 12 and len(by) == 6 and {len(v) for v in by.values()} == {2}
    fw = [r for r in rs if r["probes"] == "pack_size,registration,sdpa_decode"]   # the framework pair
    assert len(fw) == 2 and fw[0]["start"] == fw[1]["start"]
    st.close()


def test_an_autotune_pick_is_information_and_never_fails_the_check(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'h.db'}"
    st = db.open_store(url, create=True)
    ingest.ingest_paths(st, [EXPORT])
    full = [r for r in st.runs() if r["n_figures"] >= 400 and r["measurement_version"] == 1]
    # pair 4 run 2: its autotuned pins ran other knobs than its history, and two figures moved with them
    target, vs = check.check(st, full[3]["id"])
    picks = [v for v in vs if "autotune pick changed" in v.note]
    assert picks and all(v.verdict in ("PICK CHANGED", "SAME") and v.state == "" for v in picks)
    assert all("autotune pick changed (information)" in v.note for v in picks if v.verdict == "PICK CHANGED")
    assert all(plans.is_race(st.figures([full[3]["id"]])[full[3]["id"]][v.row].plan_rule) for v in picks)
    assert not [v for v in vs if v.verdict == "KERNEL CHANGED"]
    st.close()
    args = ["history", "check", str(full[-1]["id"]), "--store", url, "--fail-on-regression", "any", "--all"]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "KERNEL CHANGED" not in out and "autotune pick changed" in out
    assert "machine: start log:2026-11-30 pair 8" in out and "this GPU runs GPU-bound rows" in out


def test_a_figure_of_one_process_is_never_slower(tmp_path):
    st = db.open_store(f"sqlite:///{tmp_path / 'a.db'}", create=True)
    paths = [_run(tmp_path / f"r{i}.json", i) for i in range(3)]
    ingest.ingest_paths(st, paths)
    last = st.runs()[-1]
    figs = st.figures([r["id"] for r in st.runs()])
    row = ("execute", "generic", "1024", "graph")
    figs[last["id"]][row].value *= 1.5
    target, vs = check.judge_run(dict(last), st.runs()[:-1], [], figs)
    v = next(v for v in vs if v.row == row)
    assert v.verdict == "UNSURE" and "one process" in v.note and v.processes == 1
    st.close()


def test_one_earlier_run_of_the_same_gpu_is_too_few_the_fleet_judges():
    """H200, start S5: its second run judged against its cold first run alone raised 3 false FASTER;
    a same-GPU location needs noise.MIN_OWN earlier runs of that GPU."""
    logs, groups = [0.0, 0.01, -0.01, 0.05], ["s1", "s2", "s3", "me"]
    one = noise.predict(logs, groups, [False, False, False, True], noise.Parts(), noise.Pool(1e-5, 4e-5))
    two = noise.predict([*logs, 0.05], [*groups, "me"], [False, False, False, True, True], noise.Parts(),
                        noise.Pool(1e-5, 4e-5))
    assert noise.MIN_OWN == 2 and one.kind == "fleet" and two.kind == "same GPU"
    assert abs(two.location - math.exp(0.05)) < 1e-9
    line = check.machine_line({"start": "b/GPU-x", "same_gpu_runs": 1, "history_runs": 9, "history_starts": 4})
    assert "1 earlier run(s) on this GPU, too few to judge by (needs 2): judged against the fleet (9 runs" in line
    assert "judged against its own GPU's 2 earlier runs" in check.machine_line({"start": "b", "same_gpu_runs": 2})


def _rows(variances: list[float], df: int, seed: int = 0) -> list:
    """One Parts per row: `df` within-start degrees of freedom drawn around each row's variance."""
    import random
    rnd = random.Random(seed)
    return [noise.Parts(ssw=sum(rnd.gauss(0, v ** 0.5) ** 2 for _ in range(df)), dfw=df, sb2=1e-6, dfb=3)
            for v in variances]


def test_a_class_of_alike_rows_gets_a_weighty_prior_at_their_variance():
    p = noise.pool(_rows([4e-5] * 60, 6), moderate=True)
    assert p.dfw > 20 and 0.8 < p.sw2 / 4e-5 < 1.25 and p.pooled is not None


def test_a_few_noisy_rows_do_not_set_a_quiet_row_s_scale():
    """Light graph rows on the H200: most replay within 0.5 % between runs, a few 2.7 µs ones within
    2-3 %. Pooled, the quiet majority would be judged on the few; moderated, on the typical row,
    with little weight, so a noisy row keeps its own."""
    rows = _rows([2.5e-5] * 50 + [8e-4] * 6, 6)
    p = noise.pool(rows, moderate=True)
    plain = noise.pool(rows)
    assert p.sw2 < 0.6 * plain.sw2 and p.dfw < plain.dfw and plain.pooled is None
    quiet, loud = noise.Parts(ssw=6 * 2.5e-5, dfw=6), noise.Parts(ssw=6 * 8e-4, dfw=6)

    def judged(row, pool, mine):
        return noise.predict([0.0] * 5, ["a", "b", "c", "me", "me"], mine, row, pool)

    same, fleet = [False, False, False, True, True], [False] * 5
    assert judged(quiet, p, same).kind == "same GPU"
    assert judged(quiet, p, same).sd < 0.8 * judged(quiet, plain, same).sd
    assert judged(loud, p, same).sd > 0.9 * judged(loud, plain, same).sd   # a noisy row keeps its own
    # across GPUs the pooled variance stands: a new GPU's few kernels a few % off (start P1: three
    # 3-6 µs device rows +2.7-3.2 %) were false verdicts on the moderated one
    assert judged(quiet, p, fleet).sd == judged(quiet, plain, fleet).sd


def test_a_small_history_judges_on_the_pooled_variance_not_the_fitted_prior(tmp_path):
    """With fewer than --min-history runs a row's own variance is not used, so a fitted prior (the
    typical row's) would judge a noisy row as a quiet one: the pooled variance stands in."""
    f = types.SimpleNamespace(mode="graph", on_ratio=False, median_us=5.0, kernels="cudnn_k", plan_rule="",
                              host_state="")
    row = ("p", "v", "256", "graph")
    runs = [({"id": i, "start": s}, f) for i, s in enumerate(["a", "b", "me", "me"])]   # two of its own GPU
    h = object.__new__(check.History)
    h.target, h.parts = {"id": 9, "start": "me"}, {row: noise.Parts(ssw=1e-6, dfw=2, sb2=0.0, dfb=1)}
    h.pools = {noise.row_class(f): noise.Pool(1e-5, 1e-6, 2.0, 9e-4)}
    h.logs = lambda row, like: ([0.0, 0.001, 0.0, -0.001], [r["start"] for r, _ in runs], runs)
    h.minimum = 8
    small = h.scale(row, f)[0]
    h.minimum = 4
    enough = h.scale(row, f)[0]
    assert small.kind == enough.kind == "same GPU"
    assert small.sd > 0.03 and enough.sd < 0.01


def test_heavy_graph_replays_and_their_device_rows_take_factors_of_their_own():
    """A run that replays every heavy graph row 3 % above the history (the GPU's power state) while
    its profiled kernels hold still: the graph rows take the 3 %, the device rows on the same kernels
    none (one factor for both put 1.5 % on the device rows and judged them FASTER)."""
    logs, locs = {}, {}
    for i in range(12):
        for mode, shift in (("graph", 0.03), ("device", 0.0)):
            row = (f"p{i}", "v", "4096", mode)
            locs[row] = 7.0
            logs[row] = ("heavy", f"k{i % 2}", 7.0 + shift)
    f = noise.machine_factors(logs, locs)
    assert math.isclose(f[("graph", "heavy")], 0.03) and math.isclose(f[("device", "heavy")], 0.0, abs_tol=1e-12)
    fig = lambda mode: types.SimpleNamespace(mode=mode, on_ratio=False, median_us=900.0, kernels="k0")  # noqa: E731
    assert math.isclose(noise.offset(f, fig("graph")), 0.03)
    assert math.isclose(noise.offset(f, fig("device")), 0.0, abs_tol=1e-12)


def test_light_device_rows_on_one_kernel_at_one_size_take_that_kernel_s_factor():
    """GPU B ran pack_size's p5 kernel 4 % faster in all three variants that run it, and engine
    plan_1's kernel 4.7 % faster at 256 but 4.6 % slower at 1024: three light device rows on one
    kernel at one size share a factor; one row that moves alone, or a kernel at another size, does not."""
    logs, locs = {}, {}
    for i in range(12):                                   # enough GPU-bound rows for a machine factor
        logs[(f"g{i}", "v", "4096", "graph")] = ("gpu-bound", f"h{i}", 4.0)
        locs[(f"g{i}", "v", "4096", "graph")] = 4.0
    for v in ("generic", "pinned", "ordered"):
        logs[("pack", v, "p5", "device")] = ("light", "k5", 1.0 - 0.04)
        locs[("pack", v, "p5", "device")] = 1.0
    for v, x in (("a", 0.04), ("b", 0.0), ("c", 0.0)):     # one of three moved: the median holds
        logs[("eng", v, "1024", "device")] = ("light", "k1", 1.0 + x)
        locs[("eng", v, "1024", "device")] = 1.0
    logs[("eng", "a", "256", "device")] = ("light", "k1", 1.0 - 0.047)
    locs[("eng", "a", "256", "device")] = 1.0
    f = noise.machine_factors(logs, locs)
    assert math.isclose(f["all"], 0.0, abs_tol=1e-12)      # light rows stay out of the machine factor
    fig = lambda size, kern="k5": types.SimpleNamespace(mode="device", on_ratio=False, median_us=2.6,  # noqa: E731
                                                        kernels=kern, size=size)
    assert math.isclose(noise.offset(f, fig("p5")), -0.04)
    assert math.isclose(noise.offset(f, fig("1024", "k1")), 0.0, abs_tol=1e-12)
    assert noise.offset(f, fig("256", "k1")) == 0.0        # one row at 256: no factor
    graph = types.SimpleNamespace(mode="graph", on_ratio=False, median_us=2.6, kernels="k5", size="p5")
    assert noise.offset(f, graph) == 0.0                   # light graph rows: host-bound replays, none


# A no-change run of today's main on an eighth H200 (start S8, 2026-12-01 16:56, GPU-94ccbe2d): its
# GEMM and conv kernels ran 3-6 % slower than on the seven GPUs of the committed history, its
# elementwise, fusion-epilogue and decode-SDPA kernels did not (the machine factor, 3.6 %, is the
# heavy GEMM rows'). Kept out of the committed history; its figures alone are in tests/data.
EIGHTH = ROOT / "tests" / "data" / "h200-eighth-gpu.hbx.jsonl.gz"


def _moved(vs) -> list:
    return [v for v in vs if v.verdict in ("SLOWER", "FASTER", "KERNEL CHANGED")]


def _with(tmp_path, data: Path, gpu: str) -> tuple[db.Store, list[dict]]:
    """The committed history and a GPU kept out of it (tests/data): the store, and that GPU's runs."""
    st = db.open_store(f"sqlite:///{tmp_path / 'h.db'}", create=True)
    res = ingest.ingest_paths(st, [EXPORT, data])
    assert not res.errors
    return st, [r for r in st.runs() if (r["gpu_uuid"] or "").startswith(gpu)]


def _eighth(tmp_path):
    st, runs = _with(tmp_path, EIGHTH, "GPU-94ccbe2d")
    return st, runs[0]


def _gate_passes(tmp_path, capsys) -> None:
    """`history check latest --fail-on-regression` on the store _with made exits 0."""
    code = cli.main(["history", "check", "latest", "--store", f"sqlite:///{tmp_path / 'h.db'}", "--fail-on-regression"])
    assert code == 0, capsys.readouterr().out


def test_an_eighth_gpu_outside_the_history_fails_no_nightly_gate(tmp_path, capsys):
    """What such a GPU leaves today: its shift said once, and any verdict it raises unconfirmed
    (new, or suspect where a later run of another start does not show it: the committed history
    holds later starts), so `--fail-on-regression` does not fail the job."""
    st, run = _eighth(tmp_path)
    target, vs = check.check(st, run["id"])
    assert 0.03 < target["machine_factor"] < 0.045 and target["same_gpu_runs"] == 0
    changed = _moved(vs)
    assert len(changed) <= 3 and all(v.state in ("new", "suspect") for v in changed)
    st.close()
    _gate_passes(tmp_path, capsys)


@pytest.mark.xfail(strict=True, reason="measured on the H200 (start S8): 2 false SLOWER (transpose pretransposed "
                                       "t256 graph +3.3 %, device +2.7 %) and 1 false FASTER (contiguous_copy t256 "
                                       "device -3.9 %): its GEMMs ran 3-6 % slower, its copies not; one factor per "
                                       "size class and mode cannot hold both")
def test_an_eighth_gpu_s_no_change_run_raises_no_false_verdict(tmp_path):
    st, run = _eighth(tmp_path)
    assert not _moved(check.check(st, run["id"])[1])
    st.close()


def test_a_new_gpu_that_moves_rows_both_ways_is_named_once():
    """GPU B (2026-12-01) ran pack_size's kernels 4 % faster and engine plan_1's at 1024 4.6 % slower
    than 11 other GPUs: the check says once what such a run looks like."""
    def v(verdict, mode="device"):
        return check.Verdict("p", "v", "1", mode, "us", 1.0, 1.0, 0.04, 0.025, 20, verdict, scale="fleet")
    both = [v("SLOWER"), v("FASTER"), v("FASTER", "graph"), v("SAME")]
    line = check.new_gpu_line({"same_gpu_runs": 0}, both)
    assert "this GPU moved 3 graph/device rows both ways" in line and "another start" in line
    assert check.new_gpu_line({"same_gpu_runs": 1}, both) == line      # one run of its own: still the fleet
    assert check.new_gpu_line({"same_gpu_runs": 2}, both) == ""
    assert check.new_gpu_line({"same_gpu_runs": 0}, [v("SLOWER"), v("SLOWER")]) == ""
    assert check.new_gpu_line({"same_gpu_runs": 0}, [v("SLOWER"), v("FASTER", "eager")]) == ""


# GPU B (start 266ed64d, GPU-2dcc6c43, 2026-12-01 19:56-20:05), three no-change runs of today's main:
# pack_size's kernels at p5 and p15 ran 3.6-4.2 % faster than on the 11 GPUs of the committed
# history (2.59 against 2.69-2.71 µs), engine plan_1's 4.6 % faster at 256 and 4.6 % slower at 1024,
# every run alike. It failed the nightly recipe, so it is kept out of the committed history; its
# figures alone are in tests/data.
GPU_B = ROOT / "tests" / "data" / "h200-gpu-b.hbx.jsonl.gz"


def _gpu_b(tmp_path):
    return _with(tmp_path, GPU_B, "GPU-2dcc6c43")


def test_gpu_b_fails_no_nightly_gate_and_its_third_run_is_judged_on_its_own_gpu(tmp_path, capsys):
    """Its first two runs, against the fleet, call its kernels' speed on pack_size and engine rows,
    unconfirmed, with the header's caution; its third, against its own two runs (graph and device
    rows as ratios to their baseline), calls nothing, on a median MDC of 1.5 %."""
    st, runs = _gpu_b(tmp_path)
    assert len(runs) == 3
    for r in runs[:2]:
        target, vs = check.check(st, r["id"])
        assert target["same_gpu_runs"] < noise.MIN_OWN
        assert all(v.probe in ("pack_size", "engine") and v.scale == "fleet" and v.state != "confirmed"
                   for v in _moved(vs))
    assert "moved 4 graph/device rows both ways" in check.render(*check.check(st, runs[0]["id"]), width=200)
    target, vs = check.check(st, runs[2]["id"])
    assert target["same_gpu_runs"] == 2 and not _moved(vs)
    mdc = check.median_mdc(vs)
    assert mdc["graph"] <= 0.015 and mdc["device"] <= 0.015
    assert any(v.on_ratio and v.scale == "same GPU" for v in vs if v.mode == "graph")
    st.close()
    _gate_passes(tmp_path, capsys)


@pytest.mark.xfail(strict=True, reason="measured on the H200 (GPU B): 4 false verdicts on its first run and 1 on "
                                       "its second (engine plan_1 and plan_2 1024 graph and device +3.5 to +4.6 %, "
                                       "plan_6 256 device -2.7 %; 11 and 8 before light device rows took their "
                                       "kernel's factor): a GPU's kernels apart from every other GPU's look like "
                                       "a change to one run")
def test_gpu_b_s_no_change_runs_raise_no_false_verdict_against_the_fleet(tmp_path):
    st, runs = _gpu_b(tmp_path)
    for r in runs[:2]:
        assert not _moved(check.check(st, r["id"])[1]), r["id"]
    st.close()
