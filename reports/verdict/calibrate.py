"""The store prior: what a store with few runs of its own leans on, per row class.

The committed H200 history (reports/reference/h200/history.hbx.jsonl.gz) is fitted as one history,
its newest full run's classes, and written to prior-h200.json beside this file (`hostbench-maint
verdict-check --write-prior` writes it; a CPU test holds the file to the export). It is the prior of a store of
H200 runs only. A store of another GPU model gets the same classes widened (WIDEN x each variance,
a weight of one degree of freedom, tails no lighter than the H200's): it learns its own from its
first runs, and says how many runs and starts stand behind each class.
"""
from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path

from cudnn_hostbench.reports.verdict import decide, judge, model, structure
from cudnn_hostbench.reports.verdict import pool as pools

PRIOR = Path(__file__).resolve().parent / "prior-h200.json"
WIDEN = 4.0        # variance multiple of the generic prior (twice the H200's sd)




@dataclasses.dataclass
class Prior:
    """What a store with few runs leans on: each row class's pool, and each row's components."""
    classes: dict = dataclasses.field(default_factory=dict)    # class -> Pool
    rows: dict = dataclasses.field(default_factory=dict)       # row_key -> model.Parts
    # "kind|name" -> [sd between starts, its df, sd within a start, its df] of a machine factor or term
    terms: dict = dataclasses.field(default_factory=dict)

    def get(self, cls: str):
        return self.classes.get(cls)

    def rows_for(self, figs: dict) -> dict:
        """row() of each of a run's rows that the prior holds, by row: what the model pools in."""
        got = {row: self.row(f) for row, f in figs.items()}
        return {row: p for row, p in got.items() if p is not None}

    def row(self, fig) -> model.Parts | None:
        """The row's components in its host state; else the same row's in another host state, the
        widest: the prior holds each row in the state its newest full run timed it in, and a row as
        noisy as an autotune sweep (0.3-4 s) judged on its class's components instead reads a
        no-change A/A pair as SLOWER (log 2026-12-04-2011)."""
        key = row_key(fig)
        got = self.rows.get(key)
        if got is not None:
            return got
        head, bars = key.rsplit("|", 1)[0] + "|", key.count("|")
        other = [p for k, p in self.rows.items() if k.startswith(head) and k.count("|") == bars]
        return max(other, key=lambda p: p.sw2 + p.vb + p.sp2, default=None)


def row_key(fig) -> str:
    """A row and what its figure is: the same row judged in µs or on a ratio, in another host state,
    is another row."""
    return "|".join((*fig.row, "ratio" if fig.on_ratio else "us", fig.host_state or ""))


def fit(runs: list[dict], figs: dict) -> Prior:
    """The prior of the newest full run of the newest history key among `runs` (oldest first), its
    earlier runs on that key as the history: its classes' pools and its rows' components."""
    key = runs[-1]["history_key"]
    same = [r for r in runs if r["history_key"] == key]
    most = max(len(figs[r["id"]]) for r in same)
    full = [r for r in same if len(figs[r["id"]]) >= most / 2]
    target = full[-1]
    md = judge.fit(dict(target), [r for r in same if r is not target], figs, last=len(same))
    return Prior(md.pools, {row_key(figs[target["id"]][row]): p for row, p in md.parts.items()}, _terms(md))


def _terms(md) -> dict:
    """How much each machine factor and structure term of the history's runs varies: between starts
    (every run) and within a start (runs of starts with two or more), as sds with their df."""
    out = {}
    for kind in ("machine", *(lvl[0] for lvl in structure.LEVELS)):
        by: dict[str, list[tuple[str, float]]] = {}
        for r in md.before:
            for name, (x, _) in decide.terms_of(md, r["id"], kind).items():
                by.setdefault(name, []).append((model.start_of(r), x))
        for name, xs in by.items():
            if len(xs) < 3:
                continue
            vals = [x for _, x in xs]
            starts: dict[str, list[float]] = {}
            for g, x in xs:
                starts.setdefault(g, []).append(x)
            ss = sum(sum((x - sum(v) / len(v)) ** 2 for x in v) for v in starts.values())
            dfw = sum(len(v) - 1 for v in starts.values())
            out[f"{kind}|{name}"] = [statistics.stdev(vals), len(vals) - 1,
                                     (ss / dfw) ** 0.5 if dfw else 0.0, dfw]
    return out


def _short(d: dict) -> dict:
    return {k: (float(f"{v:.6g}") if isinstance(v, float) else v) for k, v in d.items()}


def to_json(prior: Prior, gpu: str, runs: int, starts: int) -> str:
    return json.dumps({"gpu": gpu, "runs": runs, "starts": starts,
                       "classes": {c: _short(dataclasses.asdict(p)) for c, p in sorted(prior.classes.items())},
                       "rows": {k: _short(dataclasses.asdict(p)) for k, p in sorted(prior.rows.items())},
                       "terms": {k: [float(f"{x:.6g}") for x in v] for k, v in sorted(prior.terms.items())}},
                      indent=0, sort_keys=True) + "\n"


_LOADED: dict = {}


def load(gpu: str | None, path: Path = PRIOR) -> Prior:
    """The H200 prior (classes and rows) for an H200 store, the widened generic one (classes only)
    otherwise; an empty one when the file is missing or unreadable (the store's own figures alone)."""
    if path not in _LOADED:
        try:
            doc = json.loads(path.read_text())
            _LOADED[path] = (doc.get("gpu"), {c: pools.Pool(**p) for c, p in doc["classes"].items()},
                             {k: model.Parts(**p) for k, p in (doc.get("rows") or {}).items()},
                             dict(doc.get("terms") or {}))
        except (OSError, ValueError, KeyError, TypeError):
            _LOADED[path] = (None, {}, {}, {})
    name, classes, rows, terms = _LOADED[path]
    if not classes:
        return Prior()
    if gpu and gpu == name:
        return Prior({c: dataclasses.replace(p, source=f"{name} prior") for c, p in classes.items()}, rows, terms)
    return Prior({c: dataclasses.replace(p, s0w=p.s0w * WIDEN, sb2=p.sb2 * WIDEN, s0b=p.s0b * WIDEN, s0p=p.s0p * WIDEN,
                                         d0w=min(p.d0w, 1.0), d0b=min(p.d0b, 1.0), d0p=min(p.d0p, 1.0),
                                         source=f"generic prior (widened {name})")
                  for c, p in classes.items()})
