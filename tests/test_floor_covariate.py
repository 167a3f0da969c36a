"""The host floor as a covariate of eager pairs (reports/verdict/covariate.py): what it takes out,
what it must leave in, and that validation resamples it with its pairs."""
import gzip
import json
import math
import random

from cudnn_hostbench.reports.judge import validate_ab
from cudnn_hostbench.reports.verdict import covariate, paired


def _job(pairs=10, rows=8, beta=-0.5, noise=0.01, floor_sd=0.05, shift=None, side_floor=0.0, seed=3):
    """Eager ratio rows of one class whose pair differences follow the pair's floor difference
    (slope `beta`) plus noise; `shift` {row: log change}; `side_floor`: B's floor is that much higher."""
    rng = random.Random(seed)
    floors = [rng.gauss(side_floor, floor_sd) for _ in range(pairs)]
    out = []
    for i in range(rows):
        aligned = [(shift or {}).get(i, 0.0) + beta * x + rng.gauss(0, noise) for x in floors]
        out.append(paired.PairedRow(("p", f"v{i}", "256", "eager"), "eager light ratio", list(aligned), 12.0, True,
                                    aligned=aligned, floors=floors))
    return out


def _by_key(judgement):
    return {v.key: v for v in judgement.rows}


def test_the_floor_takes_the_host_speed_out_of_every_eager_row_and_narrows_its_mdc():
    rows = _job()
    adjusted = _by_key(paired.judge(rows))
    plain = _by_key(paired.judge([paired.PairedRow(r.key, r.cls, r.diffs, r.level_us, True) for r in rows]))
    assert all(v.floor_adjusted and not plain[key].floor_adjusted for key, v in adjusted.items())
    median = lambda verdicts: sorted(v.mdc for v in verdicts)[len(verdicts) // 2]   # noqa: E731
    assert median(adjusted.values()) < 0.7 * median(plain.values())
    assert abs(paired.judge(rows).floor["slopes"]["eager light ratio"] - -0.5) < 0.1


def test_a_change_survives_the_adjustment_at_its_size():
    rows = _job(shift={0: math.log(1.10)})
    v = _by_key(paired.judge(rows))[("p", "v0", "256", "eager")]
    assert v.verdict == "SLOWER" and abs(v.change - 0.10) < 0.015


def test_floors_that_differ_by_side_are_part_of_the_change_and_adjust_nothing():
    rows = _job(side_floor=0.08, floor_sd=0.01)
    j = paired.judge(rows)
    assert not any(v.floor_adjusted for v in j.rows)
    assert "differ" in j.floor["note"]


def test_too_few_pairs_or_a_floor_that_never_moved_adjust_nothing():
    assert "needs" in paired.judge(_job(pairs=3)).floor["note"]
    assert "did not vary" in paired.judge(_job(floor_sd=0.0)).floor["note"]


def test_graph_and_device_rows_are_never_adjusted():
    rows = _job()
    graph = [paired.PairedRow((*r.key[:3], "graph"), "graph light", r.diffs, 9.0, aligned=r.aligned, floors=r.floors)
             for r in rows]
    j = paired.judge(graph)
    assert not any(v.floor_adjusted for v in j.rows) and not j.floor["slopes"]


def test_a_heavy_class_gets_its_own_slope_not_the_light_rows():
    light = _job(beta=-0.6)
    heavy = [paired.PairedRow((r.key[0], f"h{i}", "4096", "eager"), "eager heavy ratio",
                              [d - (-0.6) * x for d, x in zip(r.diffs, r.floors)], 900.0, True,
                              aligned=[d - (-0.6) * x for d, x in zip(r.diffs, r.floors)], floors=r.floors)
             for i, r in enumerate(light)]
    slopes = paired.judge(light + heavy).floor["slopes"]
    assert abs(slopes["eager light ratio"] + 0.6) < 0.1 and abs(slopes["eager heavy ratio"]) < 0.1


def test_one_wild_pair_does_not_set_a_class_slope():
    rows = _job(beta=0.0)
    k = max(range(len(rows[0].floors)), key=lambda i: abs(rows[0].floors[i]))
    for r in rows[:2]:
        r.aligned[k] += 0.5 * math.copysign(1, r.floors[k])     # a tail pair at the widest floor difference
        r.diffs = [d for d in r.aligned if d is not None]
    assert abs(paired.judge(rows).floor["slopes"]["eager light ratio"]) < 0.2


def test_a_null_job_flips_each_pairs_floor_with_its_differences():
    rows = _job()
    picks, signs = (0, 2, 5), (1.0, -1.0, -1.0)
    null = validate_ab._resampled(rows, picks, signs)
    for r, n in zip(rows, null):
        assert n.floors == [s * rows[0].floors[i] for s, i in zip(signs, picks)]
        assert n.diffs == [s * r.diffs[i] for s, i in zip(signs, picks)]


def test_resampled_aa_jobs_with_a_floor_find_nothing():
    res = validate_ab.run([_job(pairs=10, rows=12)], resamples=60)
    assert res.jobs >= 60 and res.false_jobs == 0


def test_the_pairs_file_keeps_the_floors_and_a_file_without_them_still_loads(tmp_path):
    rows = _job()

    class C:
        side, reference = "B", "A"
    C.rows = rows
    path = tmp_path / "pairs.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump(validate_ab.pairs_doc([C]), fh)
    back = validate_ab.load_pairs(path)[0]
    assert back[0].floors == rows[0].floors and covariate.covariate(back[0]) == rows[0].floors
    doc = validate_ab.pairs_doc([C])
    del doc["comparisons"][0]["floors"]
    with gzip.open(path, "wt") as fh:
        json.dump(doc, fh)
    old = validate_ab.load_pairs(path)[0]
    assert old[0].floors == [] and not any(v.floor_adjusted for v in paired.judge(old).rows)


def test_the_report_marks_a_change_judged_at_equal_floors_and_names_the_slopes():
    from cudnn_hostbench.reports.judge import ab
    rows = _job(shift={0: math.log(1.10)})
    c = ab.Comparison("A", "B", paired.judge(rows), pairs=10, rows=rows)
    out = ab.text(c)
    assert "equal host floors" in out and "eager light ratio -0." in out
    assert any(line.startswith("SLOWER") and "%*" in line for line in out.splitlines())
    assert ab.json_doc([c], {})["comparisons"][0]["floor"]["rows"] == len(rows)
