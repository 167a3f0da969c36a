"""The interleaved A/B job (issue 66): its schedule, its job folder, the paired verdict and the
command, on CPU with synthetic worker processes (tests/ab_fakes.py)."""
import json
import math
import random
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.workers import interleave
from cudnn_hostbench.reports.verdict import paired
from cudnn_hostbench.scripts import ab_cmd
from cudnn_hostbench.scripts.cli import main
from tests import ab_fakes

SLOW_KEY = ("execute", "generic", "256", "graph")


# ---- the schedule --------------------------------------------------------------------------------

@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_williams_orders_put_every_side_in_every_position_and_after_every_other_equally_often(k):
    rows = interleave.williams(k)
    for pos in range(k):
        counts = [sum(r[pos] == s for r in rows) for s in range(k)]
        assert len(set(counts)) == 1
    follows = {}
    for r in rows:
        for a, b in zip(r, r[1:]):
            follows[(a, b)] = follows.get((a, b), 0) + 1
    if k > 2:
        assert len(follows) == k * (k - 1) and len(set(follows.values())) == 1


def test_two_sides_alternate_abba_baab():
    seq = "".join("AB"[s] for i in range(4) for s in interleave.set_order(2, i))
    assert seq == "ABBABAAB"


def test_a_set_is_paired_only_when_both_of_its_processes_finished(tmp_path):
    cs = ab_fakes.cases()
    for i in range(4):
        ab_fakes.write_proc(interleave.proc_folder(tmp_path, i, i % 2), cs, i)
    (interleave.proc_folder(tmp_path, 3, 1) / "done.json").unlink()      # killed mid-process
    procs = interleave.processes(tmp_path, 2)
    got = interleave.pairs(procs, 2)
    assert [(a.index, b.index) for a, b in got[1]] == [(0, 1)]
    assert interleave.next_index(procs, 2) == 4                          # the unfinished set is not reused


# ---- the paired verdict --------------------------------------------------------------------------

def test_the_trimmed_mean_ignores_one_wild_pair_and_its_scale_matches_the_spread():
    xs = [0.01, 0.012, 0.009, 0.011, 0.5, 0.010, 0.0105, 0.0095, 0.011, 0.01]
    m, s2, h = paired.trimmed(xs)
    assert abs(m - 0.0103) < 0.001 and h == 6 and s2 < 1e-5


def test_the_class_prior_recovers_the_variance_and_weight_it_was_drawn_from():
    rng = random.Random(1)
    s0, d0, d = 0.0004, 8.0, 3
    s2s = []
    for _ in range(3000):
        sigma2 = s0 * d0 / sum(rng.gauss(0, 1) ** 2 for _ in range(int(d0)))
        s2s.append(sigma2 * sum(rng.gauss(0, 1) ** 2 for _ in range(d)) / d)
    pr = paired.fit_prior(s2s, [d] * len(s2s))
    assert abs(pr.s2 / s0 - 1) < 0.15 and 5 < pr.df < 12


def _rows(n_rows=60, pairs=6, sigma=0.01, shift=None, seed=0, blocks=10):
    """Independent rows of one class, spread over `blocks` blocks (probe × size) as a suite's are."""
    rng = random.Random(seed)
    rows = []
    for i in range(n_rows):
        diffs = [rng.gauss((shift or {}).get(i, 0.0), sigma) for _ in range(pairs)]
        rows.append(paired.PairedRow(("p", f"v{i}", str(i % blocks), "graph"), "graph light", diffs, 9.0))
    return rows


def test_an_aa_job_gets_no_verdict_and_its_rows_are_same_with_an_mdc_under_the_threshold():
    j = paired.judge(_rows())
    assert not any(r.moved for r in j.rows)
    # a row keeps its own spread when it came out above its class's: a few lose their SAME to it
    same = [r for r in j.rows if r.verdict == "SAME"]
    assert len(same) >= 0.85 * len(j.rows) and all(r.mdc < paired.practical("graph light") for r in same)


def test_a_row_moved_past_its_mdc_is_slower_and_its_interval_holds_the_change():
    j = paired.judge(_rows(pairs=paired.SIGN_PAIRS, shift={7: math.log(1.06)}))
    r = j.rows[7]
    assert r.verdict == "SLOWER" and r.low < 0.06 < r.high
    assert sum(x.moved for x in j.rows) == 1


def test_a_row_is_found_only_once_its_signs_could_pass_alone():
    # the same change on fewer pairs than SIGN_PAIRS leans, and says how many pairs would let it pass
    for pairs in range(paired.MIN_PAIRS, paired.SIGN_PAIRS):
        r = paired.judge(_rows(pairs=pairs, sigma=0.002, shift={7: math.log(1.06)})).rows[7]
        assert r.verdict == "UNSURE" and r.low > 0 and r.more_pairs == paired.SIGN_PAIRS - pairs, pairs
        assert r.to_dict()["leans"] == "SLOWER"


@pytest.mark.parametrize("n", [3, 5, 8, 12])
def test_the_sign_flip_p_of_pairs_that_all_agree_is_two_in_two_to_the_n(n):
    assert paired.sign_flip_p([0.01 * (1 + i % 3) for i in range(n)]) == pytest.approx(2 / 2 ** n)
    assert paired.sign_flip_p([0.01, -0.01] * n) == 1.0


def test_the_sign_flip_p_past_full_counting_is_never_zero_and_stays_small_for_agreeing_pairs():
    p = paired.sign_flip_p([0.01] * (paired.SIGN_ENUMERATE + 4))
    assert 0 < p < 1e-3


def test_rows_of_one_block_lend_their_class_no_more_weight_than_that_block():
    # sixty rows that agree closely but share one block: the prior weighs as one block's rows do
    one = paired.judge(_rows(blocks=1)).priors["graph light"]
    many = paired.judge(_rows(blocks=30)).priors["graph light"]
    h = paired.kept(6)
    assert one.df <= h - 1 < many.df


def test_a_row_tighter_than_its_class_is_judged_at_its_class_variance():
    rows = _rows()
    rows[0] = paired.PairedRow(rows[0].key, rows[0].cls, [0.0001, 0.0002, 0.0001, 0.0002, 0.0001, 0.0002], 9.0)
    j = paired.judge(rows)
    prior, mdc = j.priors["graph light"], j.rows[0].mdc
    assert prior.df > 0 and mdc >= math.expm1(2 * math.sqrt(prior.s2 / paired.kept(6)))


def test_an_unsure_row_says_how_many_more_pairs_would_decide_it():
    rows = _rows(sigma=0.004)
    rows.append(paired.PairedRow(("p", "noisy", "256", "eager"), "eager ratio", [0.2, -0.15, 0.1], None))
    v = paired.judge(rows).rows[-1]
    assert v.verdict == "UNSURE" and v.mdc > paired.practical("eager ratio") and v.more_pairs >= 1


def test_a_kernel_that_differs_between_the_sides_is_reported_never_averaged_away():
    rows = _rows(n_rows=10)
    rows[0].kernels = (("sm90_gemm_a",), ("sm90_gemm_b",))
    rows[1].kernels, rows[1].race = (("x",), ("y",)), True          # an autotune pick: not a change of sides
    j = paired.judge(rows)
    assert j.rows[0].verdict == "KERNEL CHANGED" and "sm90_gemm_b" in j.rows[0].note
    assert j.rows[1].verdict == "SAME"


def test_fewer_than_three_pairs_give_no_verdict():
    v = paired.judge([paired.PairedRow(("p", "v", "256", "graph"), "graph light", [0.5, 0.5], 9.0)]).rows[0]
    assert v.verdict == "UNSURE" and v.more_pairs == 1 and v.change is None


# ---- the command, end to end on synthetic processes ----------------------------------------------

@pytest.fixture
def fake_job(monkeypatch):
    """ab_cmd with synthetic processes: side 1 is 6 % slower on SLOW_KEY when `slow` is set."""
    state = {"slow": False, "crash_at": None, "kernels": None, "calls": 0, "blocks": [], "units": []}
    monkeypatch.setattr(ab_cmd, "collect_cases", lambda a, opts: ab_fakes.cases())

    def run_process(folder, env, cases, options, worker, floor, timeout_s, ahead=None, then=None):
        index, side = (int(x) for x in folder.name[1:].split("-"))
        state["calls"] += 1
        state["blocks"].append(sorted({(c[1], c[2]) for c in cases}))
        state["units"].append({(c[1], c[2], ab_cmd.phase_of(c[4])) for c in cases})
        if state["crash_at"] is not None and index == state["crash_at"]:
            folder.mkdir(parents=True)
            done = {"rc": 1, "wall_s": 1.0, "error": "RuntimeError: cuDNN went away", "worker": worker}
            (folder / "done.json").write_text(json.dumps(done))
            return done
        shift = {SLOW_KEY: math.log(1.06)} if state["slow"] and side == 1 else None
        kernels = state["kernels"] if side == 1 else None
        return ab_fakes.write_proc(folder, cases, seed=index * 7919 + 1, shift=shift, kernels=kernels)

    monkeypatch.setattr(interleave, "run_process", run_process)
    return state


def _ab(tmp_path, *extra):
    return main(["ab", "--no-gpu-check", "--out", str(tmp_path / "job"), "--budget-min", "5", *extra])


def test_an_aa_job_decides_its_rows_and_finds_nothing(tmp_path, fake_job, capsys):
    assert _ab(tmp_path, "--pairs", "20", "--fail-on-regression") == 0
    doc = json.loads((tmp_path / "job" / "ab.json").read_text())
    c = doc["comparisons"][0]
    assert doc["pass"] and not any(r["verdict"] in ("SLOWER", "FASTER") for r in c["rows"])
    assert c["counts"].get("SAME", 0) >= 0.9 * len(c["rows"])
    assert {p.name for p in (tmp_path / "job").iterdir()} >= {"ab.md", "ab.csv", "ab.json", "ab.png", "sides", "procs"}
    assert len(list((tmp_path / "job" / "sides").glob("*.json"))) == 2
    assert "rows decided" in capsys.readouterr().out


def test_a_slower_row_fails_the_job_and_leads_the_table(tmp_path, fake_job, capsys):
    fake_job["slow"] = True
    assert _ab(tmp_path, "--pairs", "8", "--fail-on-regression") == 1
    out = capsys.readouterr().out
    first = [ln for ln in out.splitlines() if ln.startswith(("SLOWER", "FASTER"))][0]
    assert first.startswith("SLOWER") and "execute/256 generic graph" in first
    assert "more leaning, paired on" in out      # found by its t test before its signs could pass
    rows = json.loads((tmp_path / "job" / "ab.json").read_text())["comparisons"][0]["rows"]
    slow = [r for r in rows if r["verdict"] == "SLOWER"]
    assert [(r["probe"], r["variant"], r["size"], r["mode"]) for r in slow] == [SLOW_KEY]
    assert slow[0]["interval"][0] < 0.06 < slow[0]["interval"][1]


def test_the_first_pass_times_every_block_and_later_sets_only_blocks_with_a_row_undecided(tmp_path, fake_job):
    _ab(tmp_path, "--pairs", "12")
    every = sorted({(c[1], c[2]) for c in ab_fakes.cases()})
    sets = fake_job["blocks"][::2]
    assert sets[:3] == [every] * 3
    assert any(set(b) < set(every) for b in sets[3:])     # a decided block is not timed again
    assert fake_job["blocks"][1::2] == sets          # both processes of a set time the same blocks


def test_a_later_set_times_only_the_phase_of_a_block_that_still_needs_pairs(tmp_path, fake_job):
    from types import SimpleNamespace as NS
    spec = NS(cases=[("probes/probe_x.py", "probe_x.py", "256", "v", m) for m in ("eager", "graph", "device")])
    eager = paired.RowVerdict(key=("probe_x.py", "v", "256", "eager"), cls="eager ratio", verdict="UNSURE",
                              change=0.0, mdc=0.09, pairs=3, more_pairs=3)
    device = _row("device light ratio", "SAME", 0.004, key=("probe_x.py", "v", "256", "device"))
    job = [NS(judgement=paired.Judgement(rows=[eager, device]))]
    a = NS(first_pairs=3, pairs=40, sharpen=False)
    assert ab_cmd.next_blocks(spec, job, 3, a) == ([("probes/probe_x.py", "256", "host")], "")
    eager.verdict, device.verdict, device.mdc = "SAME", "UNSURE", 0.05
    assert ab_cmd.next_blocks(spec, job, 3, a) == ([("probes/probe_x.py", "256", "device")], "")
    _ab(tmp_path, "--pairs", "12")      # end to end: the device rows decide first, the eager rows go on
    assert any(s and all(u[2] == "host" for u in s) for s in fake_job["units"][6:])


def test_resume_adds_pairs_to_a_job_and_refuses_another_selection(tmp_path, fake_job, capsys):
    assert _ab(tmp_path, "--pairs", "3", "--first-pairs", "3") == 0
    before = len(interleave.processes(tmp_path / "job", 2))
    assert main(["ab", "--no-gpu-check", "--resume", str(tmp_path / "job"), "--pairs", "5", "--first-pairs", "5"]) == 0
    assert len(interleave.processes(tmp_path / "job", 2)) == before + 4
    assert main(["ab", "--no-gpu-check", "--resume", str(tmp_path / "job"), "-k", "wrapper"]) == 2
    assert "another suite or side set" in capsys.readouterr().err


def test_a_side_that_crashes_ends_the_job_with_the_pairs_it_finished(tmp_path, fake_job, capsys):
    fake_job["crash_at"] = 7
    assert _ab(tmp_path, "--pairs", "8") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "crashed in process p0007" in err[0] and "cuDNN went away" in err[0]
    doc = json.loads((tmp_path / "job" / "ab.json").read_text())
    assert doc["comparisons"][0]["pairs"] == 3


def test_a_kernel_change_is_a_row_of_its_own_in_every_mode_of_its_variant(tmp_path, fake_job):
    fake_job["kernels"] = {("wrapper", "generic", "4096", "device"): ["sm90_other_gemm"]}
    _ab(tmp_path, "--pairs", "4")
    rows = json.loads((tmp_path / "job" / "ab.json").read_text())["comparisons"][0]["rows"]
    changed = {(r["probe"], r["variant"], r["size"], r["mode"]) for r in rows if r["verdict"] == "KERNEL CHANGED"}
    assert changed == {("wrapper", "generic", "4096", m) for m in ("eager", "graph", "device")}


@pytest.mark.parametrize("args, says", [
    (["fe=9.9.9", "fe=1.32.0", "--wheels", "/nonexistent"], "no nvidia_cudnn_frontend-9.9.9"),
    (["current", "cudnn=/nonexistent"], "not a folder holding libcudnn"),
    (["current", "bogus=1"], "unknown part 'bogus'"),
    (["current", "env=1"], "unknown part 'env'"),
    (["current"], "one side"),
    (["--budget-min", "0"], "--budget-min 0"),
    (["--resume", "/nonexistent/job"], "not an A/B job folder"),
])
def test_bad_input_is_one_line_exit_2_and_no_folder(tmp_path, args, says, capsys):
    out = tmp_path / "job"
    assert main(["ab", "--no-gpu-check", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0]
    assert not out.exists()


def test_an_empty_selection_is_bad_input(tmp_path, capsys):
    root = Path(__file__).resolve().parents[1]
    assert main(["ab", "--no-gpu-check", "--root", str(root), "--out", str(tmp_path / "j"), "-k", "no_such_probe_x"]) == 2
    assert "no probe case selected" in capsys.readouterr().err
    assert not (tmp_path / "j").exists()


# ---- the version matrix as one interleaved job ---------------------------------------------------

def test_the_matrix_passes_its_selection_to_the_job_and_refuses_other_pytest_arguments():
    from cudnn_hostbench.scripts import matrix_ab
    assert matrix_ab.selection(["-k", "execute", "--hb-sizes=256", "--hb-heavy"]) == \
        {"keyword": "execute", "sizes": "256", "heavy": True}
    with pytest.raises(matrix_ab.MatrixArgsError, match="--serial"):
        matrix_ab.selection(["-x"])


def test_the_matrix_judges_every_version_against_the_newest_and_keeps_its_table(tmp_path, fake_job, monkeypatch):
    from cudnn_hostbench.scripts import ab_sides
    wheels = tmp_path / "w"
    wheels.mkdir()
    for v in ("1.31.0", "1.32.0", "1.30.0"):
        (wheels / f"nvidia_cudnn_frontend-{v}-cp312-cp312-manylinux_2_28_x86_64.whl").write_bytes(b"")
    monkeypatch.setattr(ab_sides, "install", lambda side, python=None: None)
    monkeypatch.setattr(ab_sides, "check", lambda side, python=None: {"frontend": side.label, "cudnn": "91900"})
    out = tmp_path / "m"
    code = main(["matrix", "--wheels", str(wheels), "--out", str(out), "--store", "off", "--pairs", "3", "--", "-k", "x"])
    assert code == 0
    doc = json.loads((out / "matrix.json").read_text())
    assert doc["interleaved"] and doc["reference"] == "1.32.0"
    assert [e["status"] for e in doc["versions"]] == ["ok", "ok", "ok"]
    assert all((out / e["run_file"]).exists() for e in doc["versions"])
    ab = json.loads((out / "ab" / "ab.json").read_text())
    assert {(c["side"], c["reference"]) for c in ab["comparisons"]} == {("1.30.0", "1.32.0"), ("1.31.0", "1.32.0")}
    md = (out / "matrix.md").read_text()
    assert "version matrix" in md and "## Paired verdicts against the reference" in md
    assert "1.30.0 against 1.32.0" in md and "## Calls and the frontend versions that have them" in md


def test_a_row_with_no_figure_to_pair_is_unmeasured_and_asks_for_no_more_pairs():
    row = paired.PairedRow(("waterfall", "v.gpu_exposed", "256", "host"), "host", [], None, dropped=2, no_figure=3)
    v = paired.judge([row]).rows[0]
    assert v.verdict == "UNMEASURED" and v.more_pairs is None and "no figure" in v.note


def test_report_only_judges_a_finished_job_again_and_runs_nothing(tmp_path, fake_job):
    _ab(tmp_path, "--pairs", "3")
    calls = fake_job["calls"]
    (tmp_path / "job" / "ab.json").unlink()
    assert main(["ab", "--no-gpu-check", "--resume", str(tmp_path / "job"), "--report-only"]) == 0
    assert fake_job["calls"] == calls and (tmp_path / "job" / "ab.json").exists()


def test_json_dash_is_the_only_thing_on_stdout(tmp_path, fake_job, capsys):
    assert _ab(tmp_path, "--pairs", "3", "--json", "-") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "hostbench ab" and "pass" in doc


TOY = '''"""A toy probe for the A/B job's process test: plain Python, no GPU."""
from cudnn_hostbench.bench.measure.probe import Case, Probe, Variant


def build(ctx, size):
    return {n: Case(fn=lambda: 1.0, check=lambda out: 0.0) for n in ("base", "trap")}


PROBE = Probe("toy", "doc", [Variant("base", "baseline", "b"), Variant("trap", "trap", "t")], build=build,
              sizes=lambda options: ["8"], baseline="base")
'''


@pytest.mark.slow
@pytest.mark.newest_only
def test_real_worker_processes_run_in_turn_each_next_started_ahead_and_none_left_over(tmp_path, monkeypatch):
    """On CPU a worker records why it measured nothing (no GPU) and exits 0: the job runs its
    processes for real, the next one started ahead and given its job when its turn comes."""
    (tmp_path / "probes").mkdir()
    (tmp_path / "probes" / "probe_toy.py").write_text(TOY)
    monkeypatch.setattr(interleave, "AHEAD_AFTER_S", 0.0)
    job = tmp_path / "job"
    code = main(["ab", "--no-gpu-check", "--root", str(tmp_path), "--out", str(job), "--hb-modes", "eager",
                 "--first-pairs", "2", "--pairs", "2", "--budget-min", "3"])
    assert code == 0
    folders = sorted(p.name for p in (job / "procs").iterdir())
    assert folders == ["p0000-0", "p0001-1", "p0002-1", "p0003-0"]      # AB BA, nothing left from ahead
    for name in folders:
        done = json.loads((job / "procs" / name / "done.json").read_text())
        assert done["rc"] == 0 and (job / "procs" / name / "job.json").exists()
    rows = json.loads((job / "ab.json").read_text())["comparisons"][0]["rows"]
    assert {r["verdict"] for r in rows} == {"UNMEASURED"}                # no GPU: nothing to pair


def test_ab_check_on_pairs_with_nothing_to_resample_is_bad_input(tmp_path, capsys):
    import gzip
    empty = tmp_path / "pairs.json.gz"
    with gzip.open(empty, "wt") as fh:
        json.dump({"kind": "hostbench ab pairs", "comparisons": []}, fh)
    assert main(["ab-check", str(empty)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no comparison" in err[0]


@pytest.mark.parametrize("n,take", [(5, 3), (6, None), (4, 4)])
def test_resampled_null_jobs_are_as_many_as_the_formula_says_and_never_counted_twice(n, take):
    from cudnn_hostbench.reports.judge import validate_ab
    rng = random.Random(3)
    seen = {validate_ab.draw(n, take, rng) for _ in range(4000)}
    assert len(seen) == validate_ab.distinct_jobs(n, take)
    assert all(signs[0] == 1.0 for _, signs in seen)          # a job and its mirror image are one job
    rows = _rows(n_rows=12, pairs=n)
    for r in rows:
        r.aligned = list(r.diffs)
    res = validate_ab.run([rows], resamples=500, take=take)
    assert res.jobs == validate_ab.distinct_jobs(n, take) < 500


def test_ab_check_draws_no_job_shorter_than_a_verdict_needs(tmp_path, capsys):
    assert main(["ab-check", str(tmp_path), "--pairs-per-job", str(paired.MIN_PAIRS - 1)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--pairs-per-job" in err[0]


def _row(cls: str, verdict: str, mdc: float | None, key=("probe_x.py", "v", "256", "eager")):
    return paired.RowVerdict(key=key, cls=cls, verdict=verdict, change=0.0, mdc=mdc, pairs=5)


def test_sharpen_pairs_only_same_rows_past_their_goal_once_every_row_is_decided():
    from types import SimpleNamespace as NS
    spec = NS(cases=[("probes/probe_x.py", "probe_x.py", "256", "v", "eager"),
                     ("probes/probe_y.py", "probe_y.py", "256", "v", "eager")])
    blunt = _row("eager ratio", "SAME", paired.goal("eager ratio") * 1.2)
    sharp = _row("graph light ratio", "SAME", paired.goal("graph light ratio") * 0.8, key=("probe_y.py", "v", "256", "graph"))
    job = [NS(judgement=paired.Judgement(rows=[blunt, sharp]))]
    a = NS(first_pairs=3, pairs=40, sharpen=False)
    assert ab_cmd.next_blocks(spec, job, 5, a) == ([], "every row decided")
    a.sharpen = True
    todo, why = ab_cmd.next_blocks(spec, job, 5, a)
    assert todo == [("probes/probe_x.py", "256", "host")] and why == ""
    blunt.mdc = paired.goal("eager ratio") * 0.9
    assert ab_cmd.next_blocks(spec, job, 5, a)[0] == []


def test_every_class_has_a_goal_within_its_practical_threshold():
    for cls in ("eager light ratio", "eager heavy", "host ratio", "graph light", "graph light ratio", "graph gpu-bound ratio",
                "graph heavy ratio", "device light", "device heavy ratio", "device gpu-bound", "host"):
        assert 0 < paired.goal(cls) <= paired.practical(cls), cls


def test_a_cold_first_process_does_not_set_the_pace_of_the_next_set():
    clock = ab_cmd.Clock(600)
    for wall in (160.0, 112.0):    # the first process of a fresh machine builds every graph cold
        clock.add(wall, 62)
    assert clock.set_cost(2, 62) == pytest.approx(2 * 112.0)


def test_more_pairs_counts_the_degrees_of_freedom_each_pair_adds():
    # a row on 3 pairs and no prior: its t quantile at 2 df is most of its MDC
    naive = math.ceil(3 * (math.log1p(0.20) / math.log1p(0.08)) ** 2) - 3
    assert paired.more_pairs(3, se=0.01, df=2, alpha=1e-3, limit=0.08) < naive
    assert paired.more_pairs(6, se=0.005, df=20, alpha=1e-3, limit=0.08) <= paired.more_pairs(6, 0.01, 20, 1e-3, 0.08)


def test_an_unsure_row_whose_interval_leaves_out_zero_is_never_given_up():
    from types import SimpleNamespace as NS
    spec = NS(cases=[("probes/probe_x.py", "probe_x.py", "256", "v", "graph")])
    row = paired.RowVerdict(key=("probe_x.py", "v", "256", "graph"), cls="graph light ratio", verdict="UNSURE",
                            change=0.06, low=0.03, high=0.09, mdc=0.11, pairs=3, more_pairs=30)
    a = NS(first_pairs=3, pairs=8, sharpen=False)
    job = [NS(judgement=paired.Judgement(rows=[row]))]
    assert ab_cmd.next_blocks(spec, job, 3, a)[0] == [("probes/probe_x.py", "256", "host")]
    row.low = -0.01      # no lean: 30 more pairs than the 5 left cannot decide it
    assert ab_cmd.next_blocks(spec, job, 3, a)[0] == []


def test_an_ab_process_times_fewer_rounds_than_a_run_and_the_user_sets_the_eager_ones(tmp_path):
    from cudnn_hostbench.bench.measure.core import timing
    from cudnn_hostbench.bench.measure.workers.worker import Job, job_for, session_for
    cases = [["/p/probe_b.py", "b", "8", "v", m] for m in ("eager", "graph", "device")]

    def session(opts):   # as interleave.run_process hands the options to a worker's job
        job = job_for([f"{k}={v}" for k, v in opts.items()], cases, "1/1", tmp_path / "w")
        (tmp_path / "job.json").write_text(job.to_json())
        return session_for(Job.load(tmp_path / "job.json"))

    run = timing.Options()
    for given, eager in ((None, int(ab_cmd.AB_ROUNDS["--hb-rounds"])), ("7", 7)):
        opts = {**ab_cmd.AB_ROUNDS, **({"--hb-rounds": given} if given else {})}
        opt = session(opts).opt
        assert opt.rounds == eager < run.rounds
        assert opt.graph_rounds < timing.GRAPH_ROUNDS and opt.device_rounds < run.device_rounds
        assert opt.device_more == 0
    kept = session({}).opt       # a run's worker keeps a run's counts
    assert (kept.rounds, kept.device_rounds, kept.device_more) == (24, run.device_rounds, run.device_more)
