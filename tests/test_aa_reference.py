"""compare (the verdict model with a history of one run) on the committed A/A pair: two full
default runs on one freshly started H200, the first (cold) and second of that start (the own
engine: every eager row on 3 processes, graph and device rows on one; log 2026-12-03-2258). No false
alarm, no finding, and a slowdown past a row's printed MDC is caught alone. The pair is
aa/run1.json and run.json, the reference run itself (aa/compare.md); earlier pairs are in git
history (log/README.md lists them). With the
code it was first judged by, this pair raised five findings (block and kernel terms carrying
autotune rows whose pick differed between the runs, a variant) and left 311 device rows UNSURE for
"fewer than 5 samples": a race row whose pick changed sets no term, a term's scale holds its rows'
process component, and the model's variance judges a three-round device row (in sample: made on
an earlier pair; log 2026-12-02-1013)."""
import copy
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.runfile.records import load_run
from cudnn_hostbench.reports.judge import compare as cmp
from cudnn_hostbench.reports.verdict import decide

REF = Path(__file__).resolve().parent.parent / "reports" / "reference" / "h200"


PAIRS = {"newest": (REF / "aa" / "run1.json", REF / "run.json")}
_cache: dict = {}


def _pair(name):
    if name not in _cache:
        _cache[name] = tuple(load_run(p) for p in PAIRS[name])
    return _cache[name]


def _inject(run, key, factor):
    run = copy.deepcopy(run)
    r = run.find(*key)
    assert r is not None and r.ok, key
    r.samples = [x * factor for x in r.samples]
    for w in r.workers:
        w["median"] *= factor
        if w.get("ratio") is not None:
            w["ratio"] *= factor
    return run


@pytest.mark.slow
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_a_a_pair_has_no_slower_or_faster_row(pair):
    df = cmp.compare(*_pair(pair))
    assert not set(df.verdict) & {"SLOWER", "FASTER", "KERNEL CHANGED"}, df[df.verdict != "SAME"].to_string()
    judged = df[df.verdict.isin(["SAME", "UNSURE"])]
    assert len(judged) > 650 and judged.mdc.notna().mean() > 0.9 and (judged.scale == "same GPU").mean() > 0.9
    # a row with no MDC is one timed in the other host state on the other run (host-clock rows are
    # judged only against their own state),
    # or a waterfall part that is zero on both (no exposed GPU time): each says which
    blind = judged[judged.mdc.isna()]
    said = blind.note.str.startswith(("no earlier run", "not judged")) | (blind.note == decide.ZERO_NOTE)
    assert set(blind["mode"]) <= {"eager", "host"} and said.all(), blind.note[~said]
    assert not [f for f in df.attrs["findings"] if f.status], df.attrs["findings"]
    assert not df.note.str.contains("too few samples").any()


@pytest.mark.parametrize("key", [("execute", "ordered_pinned", "256", "graph"),
                                 ("execute", "generic", "256", "device"),
                                 ("transpose", "strided_view", "t256", "eager"),
                                 ("wrapper", "naive", "256", "eager")])
@pytest.mark.slow
def test_a_slowdown_past_the_printed_mdc_is_caught_alone(key):
    a, b = _pair("newest")
    row = cmp.compare(a, b)
    mdc = float(row[(row.probe == key[0]) & (row.variant == key[1]) & (row["size"] == key[2])
                    & (row["mode"] == key[3])].mdc.iloc[0])
    df = cmp.compare(a, _inject(b, key, 1 + 1.5 * mdc))
    hit = df[df.verdict.isin(["SLOWER", "FASTER", "KERNEL CHANGED"])]
    assert list(zip(hit.probe, hit.variant, hit["size"], hit["mode"], hit.verdict)) == [(*key, "SLOWER")]



COMMITTED = [("aa/run1.json", "run.json", "aa/compare.md"),
             ("matrix/run-fe1.31.0.json", "matrix/run-fe1.32.0.json", "matrix/compare-fe1.31-vs-fe1.32.md"),
             ("matrix/run-fe1.20.0.json", "matrix/run-fe1.32.0.json", "matrix/compare-fe1.20-vs-fe1.32.md")]


@pytest.mark.parametrize("a,b,md", COMMITTED, ids=[m for *_, m in COMMITTED])
def test_committed_compares_are_what_the_code_and_the_shipped_prior_say_today(a, b, md, tmp_path, monkeypatch, capsys):
    # a change of the verdict model or of the prior it ships (reports/verdict/prior-h200.json) that
    # leaves these reports stale fails here: re-render them with the command the failure names
    from cudnn_hostbench.scripts import cli
    monkeypatch.chdir(REF.parents[2])   # the paths as the reports name them, from the checkout's root
    out = tmp_path / "c.md"
    rel = REF.relative_to(REF.parents[2])
    assert cli.main(["compare", str(rel / a), str(rel / b), "--markdown", str(out)]) == 0
    capsys.readouterr()
    assert out.read_text(encoding="utf-8") == (REF / md).read_text(encoding="utf-8"), \
        f"{md} is stale: hostbench compare {rel / a} {rel / b} --markdown {rel / md}"
