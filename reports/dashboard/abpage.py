"""The dashboard's A/B section, read from the store's paired results (hb_ab_rows): per series of
jobs (one reference label against one side label, e.g. tonight's build against the pinned release),
each job's rows counted by verdict (UNSURE counted as such: never inside an all-clear), the trend
of each night's paired change with its interval for every row that moved in any job, and the newest
job whole: its chart of every row (ab.png's) and its table led by the rows that moved.
"""
from __future__ import annotations

import statistics
from collections import Counter

from cudnn_hostbench.reports.dashboard import charts
from cudnn_hostbench.reports.history.abjobs import MOVED

MAX_TRENDS = 36
ORDER = {"SLOWER": 0, "KERNEL CHANGED": 1, "FASTER": 2}


def _pct(fraction):
    return None if fraction is None else fraction * 100


def _classes(rows: list[dict]) -> list[dict]:
    """A job's rows counted per class (SAME, UNSURE, moved), each class's median MDC of its SAME rows."""
    by_class: dict = {}
    for r in rows:
        c = by_class.setdefault(r["cls"], {"class": r["cls"], "rows": 0, "same": 0, "unsure": 0, "moved": 0,
                                           "mdcs": []})
        c["rows"] += 1
        c["same"] += r["verdict"] == "SAME"
        c["unsure"] += r["verdict"] == "UNSURE"
        c["moved"] += r["verdict"] in MOVED
        if r["verdict"] == "SAME" and r["mdc"] is not None:
            c["mdcs"].append(r["mdc"])
    return [{**c, "median_mdc": statistics.median(c["mdcs"]) if c["mdcs"] else None}
            for c in sorted(by_class.values(), key=lambda c: c["class"])]


def _job(rows: list[dict]) -> dict:
    """One job of a series: its facts and its rows counted by verdict and class."""
    first = rows[0]
    counts = Counter(r["verdict"] for r in rows)
    unsure = [r for r in rows if r["verdict"] == "UNSURE"]
    same = [r for r in rows if r["verdict"] == "SAME"]
    mdcs = sorted(r["mdc"] for r in unsure if r["mdc"] is not None)
    classes = _classes(rows)
    moved = sorted((r for r in rows if r["verdict"] in MOVED),
                   key=lambda r: (-abs(r["change"] or 0.0), ORDER.get(r["verdict"], 9)))
    return {"hash": first["job_hash"], "started_at": first["started_at"], "gpu": first["gpu"],
            "path": first["job_path"], "pairs": first["job_pairs"], "judged_on": first["judged_on"],
            "side": first["side"], "side_frontend": first["side_frontend"], "side_cudnn": first["side_cudnn"],
            "reference": first["reference"], "reference_frontend": first["reference_frontend"],
            "reference_cudnn": first["reference_cudnn"], "side_run_id": first["side_run_id"],
            "reference_run_id": first["reference_run_id"], "rows": len(rows), "counts": dict(counts),
            "same": len(same), "unsure": len(unsure), "moved": moved,
            "unsure_rows": sorted(unsure, key=lambda r: -(r["mdc"] or 0.0)),
            "unsure_mdc": (statistics.median(mdcs) if mdcs else None, mdcs[0] if mdcs else None,
                           mdcs[-1] if mdcs else None),
            "classes": classes, "all_rows": rows}


def _moved_keys(jobs: list[dict]) -> dict:
    """Each row that moved in any job, with its largest change (absolute)."""
    moved_keys: dict = {}
    for job in jobs:
        for r in job["moved"]:
            k = (r["probe"], r["variant"], r["size"], r["mode"])
            moved_keys[k] = max(moved_keys.get(k, 0.0), abs(r["change"] or 0.0))
    return moved_keys


def _facet(key: tuple, jobs: list[dict], index: dict) -> dict:
    """One moved row's trend: a point per job that judged it, and its newest verdict."""
    pts, last = [], ""
    for job in jobs:
        got: dict | None = next((x for x in job["all_rows"]
                                 if (x["probe"], x["variant"], x["size"], x["mode"]) == key), None)
        if got is None or got["change"] is None:
            continue
        pts.append((index[job["hash"]], _pct(got["change"]), _pct(got["low"]), _pct(got["high"]), got["verdict"]))
        last = got["verdict"]
    return {"key": key, "title": f"{key[0]}/{key[1]}/{key[2]} · {key[3]}", "verdict": last, "points": pts}


def series(rows: list[dict]) -> list[dict]:
    """Per (reference, side): its jobs oldest first, the trend facets of the rows that moved in any
    of them (a point per job that judged the row), and the newest job whole."""
    by: dict = {}
    for r in rows:
        by.setdefault((r["reference"], r["side"]), {}).setdefault(r["job_hash"], []).append(r)
    out = []
    for (ref, side), jobs in sorted(by.items()):
        js = sorted((_job(rs) for rs in jobs.values()), key=lambda j: (j["started_at"], j["hash"]))
        index = {j["hash"]: i for i, j in enumerate(js)}
        moved_keys = _moved_keys(js)
        facets = [_facet(k, js, index) for k in sorted(moved_keys, key=lambda k: -moved_keys[k])[:MAX_TRENDS]]
        ticks = [j["started_at"][5:16].replace("T", " ") for j in js]
        newest = js[-1]
        out.append({"reference": ref, "side": side, "slug": "ab-" + "".join(c if c.isalnum() else "-" for c in
                                                                             f"{ref}-{side}"),
                    "jobs": js, "newest": newest, "facets": facets, "moved_rows": len(moved_keys),
                    "trend_svg": charts.ab_trend(facets, ticks) if len(js) >= 2 else "",
                    "counts_svg": charts.ab_counts(js, ticks) if len(js) >= 2 else "",
                    "job_svg": charts.ab_job([{"class": r["cls"], "change": _pct(r["change"]), "low": _pct(r["low"]),
                                               "high": _pct(r["high"]), "verdict": r["verdict"]}
                                              for r in newest["all_rows"] if r["change"] is not None])})
    return out


def control(store, run_id: int | None) -> dict | None:
    """The newest job's control (reference) run judged against its own history, as `hostbench
    history check RUN_ID` judges it: its verdict counts and findings (a new machine, a shifted
    kernel show here, not in the job's paired verdicts). None: no run of the reference is stored."""
    if run_id is None or store.run(run_id) is None:
        return None
    from cudnn_hostbench.reports.judge import check
    target, verdicts = check.check(store, run_id)
    return {"run_id": run_id, "counts": check.counts(verdicts), "findings": check.finding_lines(target),
            "same": sum(v.verdict == "SAME" for v in verdicts),
            "judged": sum(v.verdict not in ("NO HISTORY", "UNMEASURED") for v in verdicts), "rows": len(verdicts)}


def view(store) -> list[dict]:
    """The A/B section's series ([] when the store holds no A/B job), each with its newest job's
    control run judged against its history."""
    out = series(store.ab_rows())
    for a in out:
        a["control"] = control(store, a["newest"]["reference_run_id"])
    return out
