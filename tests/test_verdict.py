"""The verdict model (reports/verdict): its parts on synthetic data with known answers, and the
history check built on it on the committed H200 history."""
from __future__ import annotations

import json
import math
import random

import pytest

from cudnn_hostbench.reports.history import db
from cudnn_hostbench.reports.judge import check, validate
from cudnn_hostbench.reports.verdict import calibrate, decide, judge, model, pool, structure
from cudnn_hostbench.scripts import cli
from tests.history_store import EXPORT, RUNS, fresh, inject, stored_url


def fig(probe="p", variant="v", size="256", mode="device", value=10.0, workers=None, kernels="k1", us=None,
        on_ratio=False, host_state=""):
    return db.Figure(probe, variant, size, mode, "ok", "us/call", value, on_ratio, us if us is not None else value,
                     workers if workers is not None else [value] * 3, 0.0, "", kernels, host_state)


def test_benjamini_hochberg_finds_what_passes_its_rank_threshold():
    assert decide.bh([0.001, 0.02, 0.04, 0.5], 0.05) == [True, True, False, False]
    assert decide.bh([0.04, 0.04, 0.04], 0.05) == [True, True, True]   # the last rank lets every one in
    assert decide.bh([0.9, 0.6], 0.05) == [False, False]


def test_one_way_components_recover_what_made_the_data():
    rng = random.Random(1)
    values, groups = [], []
    for s in range(40):
        b = rng.gauss(0, 0.02)
        for _ in range(3):
            values.append(b + rng.gauss(0, 0.01))
            groups.append(f"s{s}")
    p = model.parts(values, groups, [[] for _ in values], [1.0] * len(values))
    assert p.dfw == 80 and p.dfb == 39
    assert 0.008 < math.sqrt(p.sw2) < 0.012 and 0.014 < math.sqrt(p.sb2) < 0.026


def test_heavy_tails_are_fitted_as_such_and_a_normal_is_not():
    rng = random.Random(2)
    normal = [rng.gauss(0, 1) for _ in range(4000)]
    heavy = [rng.gauss(0, 1) / math.sqrt(rng.gammavariate(1.5, 1 / 1.5)) for _ in range(4000)]   # t with 3 df
    assert pool.tails(normal)[0] >= 20
    assert pool.tails(heavy)[0] < 8
    assert pool.tails(normal[:10]) is None           # too few: nothing learned, never a normal by default
    p = pool.fit([], normal[:10], 1, 1, None, (heavy, heavy))
    assert p.nu < 8 and p.tails_own                  # the store's other classes say the tails


def _run(values: dict, kernels: dict) -> dict:
    return {row: fig(*row, value=v, kernels=kernels[row], us=v) for row, v in values.items()}


def test_a_row_s_own_change_stays_its_own_and_a_whole_kernel_becomes_a_term():
    rows = [("p", f"v{i}", "256", "device") for i in range(12)]
    kern = {r: ("kA" if i < 5 else f"k{i}") for i, r in enumerate(rows)}
    ref = {r: 0.0 for r in rows}
    one = {r: 1.0 for r in rows}
    one[rows[0]] = 1.10                                   # one row of kernel kA
    st = structure.structure({r: math.log(v) for r, v in one.items()}, ref, _run(one, kern))
    assert abs(st.adjust[rows[0]]) < 1e-9                 # its kernel term is the median of the others
    assert all(abs(st.adjust[r]) < 1e-9 for r in rows[1:5])
    whole = {r: (1.05 if kern[r] == "kA" else 1.0) for r in rows}
    st = structure.structure({r: math.log(v) for r, v in whole.items()}, ref, _run(whole, kern))
    assert all(abs(st.adjust[r] - math.log(1.05)) < 1e-9 for r in rows[:5])
    assert abs(st.terms[("kernel", "kA")][0] - math.log(1.05)) < 1e-9


def test_an_adjustment_whose_rows_disagree_widens_the_row_it_adjusts():
    """A conv kernel's graph rows moved several per cent, its device rows little; the device row
    adjusted by the median of the others read an unmoved figure as FASTER (log 2026-12-03-1219).
    The adjustment's uncertainty (the other rows' spread) beyond the history's typical one widens it."""
    rows = [("p", f"v{i}", "256", "device") for i in range(12)]
    kern = {r: ("kA" if i < 5 else f"k{i}") for i, r in enumerate(rows)}
    ref = {r: 0.0 for r in rows}
    calm = [structure.structure({r: math.log(1.0 + 0.001 * (i % 3)) for i, r in enumerate(rows)}, ref,
                            _run(dict.fromkeys(rows, 1.0), kern)) for _ in range(5)]
    apart = {r: 1.0 for r in rows}
    apart.update({rows[1]: 1.07, rows[2]: 1.045, rows[3]: 1.01, rows[4]: 1.04})   # kA's other rows disagree
    now = structure.structure({r: math.log(v) for r, v in apart.items()}, ref, _run(apart, kern))
    wide = model.adjust_excess(rows[0], now, calm)
    assert wide > (0.01) ** 2                        # more than a 1 % sd of its own
    assert model.adjust_excess(rows[0], calm[0], calm) == 0.0     # a run like its history: not widened
    assert model.adjust_excess(rows[7], now, calm) == 0.0         # a row no term adjusts
    # a run that could not adjust a row its history adjusted (a partial run: too few rows set the term)
    # keeps the whole term in its figure: widened by the history's adjustments' mean square
    moved = [structure.Structure(adjust={rows[0]: a}, levels={rows[0]: {"host"}}) for a in (-0.098, 0.054, -0.03)]
    assert model.adjust_excess(rows[0], structure.Structure(), moved) == pytest.approx((0.098**2 + 0.054**2 + 0.03**2) / 3)
    assert model.adjust_excess(rows[0], structure.Structure(), calm + [structure.Structure()] * 6) == 0.0   # seldom adjusted


def test_a_race_row_whose_pick_changed_is_adjusted_by_the_structure_but_never_sets_it():
    """An autotuned row may run another kernel in each process (H200, one start: autotune
    best_eager/256 device 4.47 then 2.44 µs): in a small kernel term it would move the other rows'
    adjustment by its own pick."""
    rows = [("p", f"v{i}", "256", "device") for i in range(12)]
    kern = {r: ("kA" if i < 5 else f"k{i}") for i, r in enumerate(rows)}
    figs = _run({r: 1.0 for r in rows}, kern)
    ref = {r: 0.0 for r in rows}
    one = {r: 1.0 for r in rows}
    one[rows[0]] = 0.55                                   # the race picked a faster kernel this time
    one[rows[1]] = 1.03
    st = structure.structure({r: math.log(v) for r, v in one.items()}, ref, figs, {rows[0]})
    assert st.terms[("kernel", "kA")][1] == rows[1:5]     # the race row sets no term
    assert abs(st.adjust[rows[2]]) < 1e-9                 # the others' median, the race row left out
    assert abs(st.adjust[rows[0]]) < 1e-9                 # yet it is adjusted like the rest


def test_the_median_of_the_other_rows_is_exact_in_constant_time():
    rng = random.Random(3)
    for _ in range(500):
        xs = sorted(rng.choice([rng.random(), 0.5]) for _ in range(rng.randint(2, 12)))
        for i in [None, *range(len(xs))]:
            rest = xs if i is None else xs[:i] + xs[i + 1:]
            assert structure.median_without(xs, i) == pytest.approx(sorted(rest)[len(rest) // 2] if len(rest) % 2
                                                                else sum(sorted(rest)[len(rest) // 2 - 1:][:2]) / 2)


def test_a_slow_host_moves_its_host_rows_as_one_term_and_a_single_build_row_stays_its_own():
    """H200, a slow-host start: eight build-time rows of four probes +41 to +77 % together were eight
    false SLOWER. The host's speed is a term of its build-time rows (and apart, of the waterfall's
    host parts and of eager µs); the waterfall's gpu parts are GPU time and stay out."""
    rows = [("p", f"b{i}", "256", "host") for i in range(6)] + [("waterfall", "pinned.gpu", "256", "host"),
                                                                  ("waterfall", "pinned.frontend", "256", "host")]
    figs = {r: fig(*r, kernels="") for r in rows}
    assert [structure.host_key(figs[r]) for r in rows[:1] + rows[-1:]] == ["build-time", "waterfall host part"]
    assert not structure.structured(figs[rows[-2]]) and structure.structured(figs[rows[-1]])
    ref = {r: 0.0 for r in rows}
    slow = {r: math.log(1.5) for r in rows[:6]}
    st = structure.structure(slow, ref, figs)
    assert all(abs(st.adjust[r] - math.log(1.5)) < 1e-9 for r in rows[:6])
    assert abs(st.terms[("host", "build-time")][0] - math.log(1.5)) < 1e-9
    one = {r: (math.log(1.5) if r == rows[0] else 0.0) for r in rows[:6]}
    st = structure.structure(one, ref, figs)
    assert all(abs(st.adjust[r]) < 1e-9 for r in rows[:6])   # one row's own change moves no adjustment
    assert decide.Finding("host", "build-time", 0.5, 6.0, 1e-6, 6, "fleet").line().startswith(
        "the host's speed: build-time rows (6) +50.0 % on this run")


def test_eager_us_rows_the_gpu_paces_keep_out_of_the_host_s_speed():
    """H200, one start, two runs whose fast state ran 30 % apart: host-paced torch.mm rows +22 to
    +36 %, GPU-paced ones (device 0.84-0.97 of eager) -1 to +9 %, and slow-state rows +80 to +130 %.
    One term over all of them read nine GPU-paced rows -24 %: nine false FASTER in compare."""
    host = [("p", f"h{i}", "256", "eager") for i in range(5)]
    gpu = [("p", f"g{i}", "4096", "eager") for i in range(5)]
    slow = [("p", f"s{i}", "256", "eager") for i in range(5)]
    figs = {r: fig(*r, value=10.0, kernels="", host_state="fast") for r in host}
    figs |= {r: fig(*r, value=200.0, kernels="", host_state="fast") for r in gpu}
    figs |= {r: fig(*r, value=10.0, kernels="", host_state="slow") for r in slow}
    for r in host + slow:      # device time 30 % of eager: the host sets the pace
        figs[r[:3] + ("device",)] = fig(*r[:3], "device", value=3.0)
    for r in gpu:              # 85 %: the GPU does
        figs[r[:3] + ("device",)] = fig(*r[:3], "device", value=170.0)
    keys = {structure.host_key(figs[r], figs) for r in host}, {structure.host_key(figs[r], figs) for r in gpu}
    assert keys == ({"eager µs fast"}, {"eager µs gpu-bound fast"})
    assert structure.host_key(figs[slow[0]], figs) == "eager µs slow"
    logs = {r: math.log(1.3) for r in host} | {r: 0.0 for r in gpu} | {r: math.log(2.0) for r in slow}
    st = structure.structure(logs, {r: 0.0 for r in logs}, figs)
    assert all(abs(st.adjust[r]) < 1e-9 for r in gpu)                    # not moved by the host's speed
    assert all(abs(st.adjust[r] - math.log(1.3)) < 1e-9 for r in host)   # nor by the slow state's rows
    assert decide.Finding("host", "eager µs gpu-bound fast", 0.02, 1.0, 0.3, 5, "fleet").line().startswith(
        "GPU-paced eager µs fast rows (5)")


def test_a_row_timed_on_the_host_s_clock_is_predicted_by_history_of_its_own_host_state():
    """H200: a slow-host run's rebuild build times (+48 to +66 %) against a history of mostly fast
    runs, and a second slow-host start behind it, were five false SLOWER "confirmed by two starts";
    the waterfall's gpu parts (differences of two host timings) run +2 to +11 % in the slow state."""
    for mode, variant in (("host", "b0"), ("host", "pinned.gpu"), ("eager", "v")):
        slow = fig("p", variant, "256", mode, host_state="slow")
        assert model.usable(fig("p", variant, "256", mode, host_state="slow"), slow)
        assert not model.usable(fig("p", variant, "256", mode, host_state="fast"), slow)
    gpu = fig(host_state="slow")                         # a device row: the host state is no covariate
    assert model.usable(fig(host_state="fast"), gpu)


def test_a_block_s_baseline_is_not_adjusted_by_the_cudnn_rows_of_its_block():
    """H200, set_stream 256 graph on three starts: the cuDNN variants' replay +2 to +6 %, torch.mm's
    +1 to +2 %: a block term over both read torch.mm 2.5 % fast, on two starts."""
    rows = [("p", f"v{i}", "256", "graph") for i in range(5)] + [("p", "torch_mm", "256", "graph")]
    figs = {r: fig(*r, kernels=f"k{i}") for i, r in enumerate(rows)}
    figs[rows[-1]] = db.Figure(*rows[-1], "ok", "us/call", 10.0, False, 10.0, [10.0] * 3, 0.0, "", "k9", "",
                               role="baseline")
    moved = {r: (math.log(1.04) if r != rows[-1] else 0.0) for r in rows}
    st = structure.structure(moved, {r: 0.0 for r in rows}, figs)
    assert abs(st.adjust[rows[-1]]) < 1e-9               # the baseline keeps its own figure
    assert all(abs(st.adjust[r] - math.log(1.04)) < 1e-9 for r in rows[:5])


def test_two_starts_share_their_location_and_variance_so_their_evidence_is_one_t():
    """Two runs judged against one prediction share its location and its variance estimate: t
    scores of 4.2 and 5.6 on 8 degrees of freedom are one t of their mean, not two independent
    scores summed (Stouffer's p is ten times smaller: past a run's false-discovery threshold)."""
    from scipy import stats
    a, b, df = 4.2, 5.6, 8.0
    assert float(decide.pair_t(a, b, 0.0)) == pytest.approx((a + b) / 2 * math.sqrt(2))
    assert float(decide.pair_t(a, b, 1.0)) == pytest.approx((a + b) / 2)   # all location: one shared error
    assert float(decide.pair_t(3.0, -3.0, 0.03)) == 0.0
    p_one = 2 * float(decide.t_sf(abs(float(decide.pair_t(a, b, 0.03))), df))
    stouffer = (stats.norm.isf(float(decide.t_sf(a, df))) + stats.norm.isf(float(decide.t_sf(b, df)))) / math.sqrt(2)
    assert p_one > 10 * 2 * stats.norm.sf(stouffer)


def test_a_prior_row_pools_with_the_store_s_own():
    own = model.Parts(sw2=0.0, dfw=0, sp2=0.0004, dfp=4)
    prior = model.Parts(sw2=0.0001, dfw=30, vb=0.0002, dfb=12, hm=2.0, sp2=0.0001, dfp=60)
    got = model.pooled(own, prior, 10.0)
    assert got.dfw == 10 and got.sw2 == pytest.approx(0.0001)
    assert got.dfp == 14 and got.sp2 == pytest.approx((0.0004 * 4 + 0.0001 * 10) / 14)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    st = fresh(tmp_path_factory.mktemp("hist"))
    yield st
    st.close()


def v3(st):
    return [r for r in st.runs() if str(r["measurement_version"]) == "3"]


@pytest.mark.slow
@pytest.mark.newest_only
def test_the_newest_run_against_its_history_calls_nothing_and_says_why_rows_are_unsure(store):
    target, vs = check.check(store, v3(store)[-1]["id"])
    assert not check.regressions(target, vs, "any")
    assert not [v for v in vs if v.verdict in decide.CHANGED]
    judged = [v for v in vs if v.z is not None]
    assert len(judged) > 600 and all(v.p is not None and v.mdc is not None for v in judged)
    for v in judged:
        limit = decide.practical(store.figures([target["id"]])[target["id"]][v.row])
        if v.verdict == "SAME":
            assert v.mdc <= limit
        if v.verdict == "UNSURE":
            assert v.mdc > limit and "too noisy to see" in v.note and "largest part" in v.note
    text = check.render(target, vs, wide=True)
    assert "judged against the fleet" in text and "this GPU runs" in text and "rows UNSURE: too noisy" in text
    assert "UNSURE " not in "\n".join(x for x in text.splitlines() if x.startswith("  UNSURE"))   # not listed
    assert "  UNSURE " in check.render(target, vs, show_all=True, wide=True)


@pytest.mark.slow
@pytest.mark.newest_only
def test_against_its_own_gpu_a_changed_row_is_caught_past_its_mdc(tmp_path):
    st = fresh(tmp_path)
    by: dict = {}
    for r in v3(st):
        by.setdefault(r["start"], []).append(r)
    for rs in (rs for rs in by.values() if len(rs) >= 3):
        target, vs = check.check(st, rs[2]["id"])
        quiet = [v for v in vs if v.mode == "device" and v.scale == "same GPU" and v.verdict == "SAME"
                 and v.mdc < 0.03 and not [w for w in vs if w.verdict in decide.CHANGED]]
        if quiet:
            break
    assert target["same_gpu_runs"] >= 2 and quiet
    inject(st, target["id"], quiet[0].row, 1 + 1.5 * quiet[0].mdc)
    target, vs = check.check(st, target["id"])
    assert [(v.row, v.verdict) for v in vs if v.verdict in decide.CHANGED] == [(quiet[0].row, "SLOWER")]
    assert check.regressions(target, vs, "any")            # a later run of another start decides "confirmed"
    st.close()


@pytest.mark.slow
@pytest.mark.newest_only
def test_a_gpu_that_runs_kernels_apart_gets_findings_not_regressions(store):
    # GPU B (2026-12-01 19:56-20:05) runs pack_size's kernels 4 % faster and two engine plans 4-5 % apart
    first_b = [r for r in store.runs() if r["gpu_uuid"].startswith("GPU-2dcc6c43")][0]
    target, vs = check.check(store, first_b["id"])
    assert target["same_gpu_runs"] == 0
    found = [f for f in target["findings"] if f.status]
    assert found and all(f.status.startswith("information") for f in found)
    assert not check.regressions(target, vs)


@pytest.mark.slow
@pytest.mark.newest_only
def test_a_whole_host_slower_is_one_host_finding_and_no_row_verdict(tmp_path):
    """Every build-time row of a run +50 %: a host that ran slow, not 32 regressions. The run: the
    first of a start new to the history (2026-12-02 10:40), judged on the fleet's host spread."""
    st = fresh(tmp_path)
    t = next(r for r in st.runs() if str(r["started_at"]).startswith("2026-12-02T10:40"))
    fs = st.figures([t["id"]])[t["id"]]
    rows = [r for r, f in fs.items() if f.mode == "host" and f.probe != "waterfall" and f.status == "ok"]
    assert len(rows) >= 8
    before = {f.name: f.change for f in check.check(st, t["id"])[0]["findings"] if f.kind == "host"}
    for r in rows:
        inject(st, t["id"], r, 1.5)
    target, vs = check.check(st, t["id"])
    assert not [v for v in vs if v.row in rows and v.verdict in decide.CHANGED]
    host = [f for f in target["findings"] if f.kind == "host" and f.name == "build-time"]
    assert host and host[0].change == pytest.approx((1 + before["build-time"]) * 1.5 - 1, rel=0.02)
    # past the FDR or not (a slow-state run's build rows carry their state's wider process spread),
    # the host's speed is information, never a regression
    assert (not host[0].status or host[0].status.startswith("information (the host's speed")), host[0].status
    assert not check.regressions(target, vs)
    st.close()


@pytest.mark.slow
@pytest.mark.newest_only
def test_history_check_writes_json_and_gates_on_regressions(tmp_path, capsys):
    url = stored_url(tmp_path)
    out = tmp_path / "check.json"
    assert cli.main(["history", "check", "latest", "--store", url, "--json", str(out),
                     "--fail-on-regression", "any"]) == 0
    doc = json.loads(out.read_text())
    st = db.open_store(url)   # the newest run is the export's last, and every figure of it gets a verdict
    figures = next(r["n_figures"] for r in st.runs() if r["id"] == doc["run"]["id"])
    st.close()
    assert doc["run"]["id"] == RUNS and len(doc["verdicts"]) == figures
    assert {"z", "p", "mdc", "scale", "verdict"} <= set(doc["verdicts"][0])
    assert all(f["kind"] in ("machine", "kernel", "gpu block", "block", "host", "variant") for f in doc["findings"])
    capsys.readouterr()
    assert cli.main(["history", "check", "latest", "--store", url, "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["run"]["id"] == RUNS
    assert cli.main(["history", "check", "latest", "--store", url, "--json", str(tmp_path / "no" / "x.json")]) == 2


def test_the_store_prior_is_the_h200_s_for_an_h200_and_wider_for_another_gpu(tmp_path):
    h200 = calibrate.load("NVIDIA H200")
    other = calibrate.load("NVIDIA B200")
    assert h200.rows and not other.rows
    for c, p in h200.classes.items():
        assert other.classes[c].s0w == pytest.approx(p.s0w * calibrate.WIDEN)
    bad = tmp_path / "prior.json"
    bad.write_text("{not json")
    assert calibrate.load("NVIDIA H200", bad).classes == {}


@pytest.mark.slow
@pytest.mark.newest_only
def test_the_shipped_prior_is_what_the_committed_history_gives():
    runs, figs = validate.load([validate.EXPORT])
    fitted = calibrate.fit(runs, figs)
    shipped = json.loads(calibrate.PRIOR.read_text())
    assert set(shipped["classes"]) == set(fitted.classes) and len(shipped["rows"]) == len(fitted.rows)
    for c, p in fitted.classes.items():
        for k in ("s0w", "sb2", "s0p", "nu", "nu_same"):
            assert shipped["classes"][c][k] == pytest.approx(getattr(p, k), rel=1e-3, abs=1e-12), (c, k)


def test_a_cached_reach_is_a_function_of_its_key_not_of_who_asked_first():
    """The MDC's reach is cached by nu rounded to 3 places: it must be computed from that key, or the
    first caller's exact nu sets it for all (a dashboard's MDC read 201.1 or 201.2 % by what ran first)."""
    decide._REACH.clear()
    a = decide._reach(8.20449, 700, 0.01)
    decide._REACH.clear()
    b = decide._reach(8.20351, 700, 0.01)
    assert a == b


@pytest.mark.slow
@pytest.mark.newest_only
def test_two_starts_judge_against_the_same_rows_history_less_the_previous_run():
    """The two-start model is the run's own history less the previous run of another start, row by
    row: with the same window it reached one run further back on every row (93-run export: an older
    run's three processes 7.9 % apart set autotune/heuristic/256/device's process variance there
    only, its sd 3.6 % against 1.0 % on the run alone)."""
    runs, figs = validate.load([EXPORT])
    for t, before, _ in reversed(validate.folds(runs)):
        md = judge.fit(dict(t), before, figs)
        prev = model.previous_start(md)
        if prev is not None and len(md.before) > md.last:
            break
    judge.judge_run(dict(t), before, [], figs, history=md)
    assert md._two is not None and md._two[0] == prev["id"]
    m2 = md._two[1]
    checked = 0
    for row, (*_, hist) in md.rows.items():
        ids = [r["id"] for r, _ in hist]
        if prev["id"] in ids and row in m2.rows and len(ids) == md.last:
            assert [r["id"] for r, _ in m2.rows[row][4]] == [i for i in ids if i != prev["id"]], row
            checked += 1
    assert checked > 100


def test_the_prior_lends_a_row_its_own_components_from_another_host_state():
    """The prior holds each row in the host state its newest full run timed it in; the same row in
    another state takes that row's widest components, not its class's (an autotune sweep judged on
    its class's read a no-change A/A pair as SLOWER +169 % after the 110-run refit)."""
    from types import SimpleNamespace
    f = SimpleNamespace(row=("autotune", "tune_sweep", "256", "host"), on_ratio=False, host_state="fast")
    noisy, calm = model.Parts(sw2=1.0, dfw=3, sp2=2.0, dfp=3), model.Parts(sw2=0.01, dfw=3)
    rows = {"autotune|tune_sweep|256|host|us|slow": noisy, "autotune|tune_sweep|256|host|us|": calm,
            "autotune|tune_sweep|2560|host|us|fast": model.Parts(sw2=9.0)}
    assert calibrate.Prior(rows=rows).row(f) is noisy
    assert calibrate.Prior(rows={**rows, "autotune|tune_sweep|256|host|us|fast": calm}).row(f) is calm
    assert calibrate.Prior(rows={"autotune|tune_sweep|2560|host|us|fast": noisy}).row(f) is None
