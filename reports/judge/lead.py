"""Which run a report leads with: one rule for the dashboard and `hostbench history check latest`.

A run is *full* when it measured at least half as many rows as the largest run of its group
(FULL_SHARE); a version-matrix part or a run of three probes is not. The run a GPU's reports lead
with is its newest full run that a person did not exclude; `latest` over a whole store is the
newest of those. The version view picks, per frontend version, the newest run that is full among
that version's runs (a matrix part is full there: it is that version's largest run).
"""
from __future__ import annotations

FULL_SHARE = 0.5
RULE = "the newest full run (one with at least half the rows of the largest run on its GPU)"


def _newest(runs: list[dict]) -> dict | None:
    return max(runs, key=lambda r: (r["started_at"], r["id"]), default=None)


def full(runs: list[dict]) -> list[dict]:
    """The runs of `runs` (not excluded) with at least FULL_SHARE of the largest one's rows."""
    kept = [r for r in runs if not r["excluded"]]
    most = max((r["n_figures"] for r in kept), default=0)
    return [r for r in kept if r["n_figures"] >= most * FULL_SHARE]


def led(runs: list[dict]) -> dict | None:
    """The run one GPU's reports lead with: its newest full run (None: every run is excluded)."""
    return _newest(full(runs))


def latest(runs: list[dict]) -> tuple[dict | None, list[dict]]:
    """(the run `history check latest` judges, the newer partial runs of its GPU it passes over),
    over every run of a store: the newest of each GPU's led run."""
    by: dict = {}
    for r in runs:
        by.setdefault(r["gpu"], []).append(r)
    pick = _newest([x for x in (led(rs) for rs in by.values()) if x is not None])
    if pick is None:
        return None, []
    return pick, newer_than(pick, by[pick["gpu"]])


def newer_than(run: dict, runs: list[dict]) -> list[dict]:
    """The runs of `runs` (not excluded) after `run`: the partial runs a report passes over."""
    return [r for r in runs if (r["started_at"], r["id"]) > (run["started_at"], run["id"]) and not r["excluded"]]


def why(newer: list[dict]) -> str:
    """What a report says about the run it leads with."""
    text = RULE
    if newer:
        ids = ", ".join(str(r["id"]) for r in newer[:5]) + (", …" if len(newer) > 5 else "")
        text += f"; {len(newer)} newer partial run(s) not judged here (id {ids}: check one by its id)"
    return text


def per_version(runs: list[dict], version_of=lambda r: r["frontend"]) -> dict[str, dict]:
    """Frontend version -> the newest run that is full among that version's runs."""
    by: dict = {}
    for r in runs:
        by.setdefault(version_of(r), []).append(r)
    out = {v: led(rs) for v, rs in by.items()}
    return {v: r for v, r in out.items() if r is not None}


def latest_in(store) -> tuple[int, str]:
    """(run id, what to say about it) for `hostbench history check latest`: lead.latest over the
    store's runs. LookupError when the store holds no run a report could lead with."""
    pick, newer = latest(store.runs())
    if pick is None:
        raise LookupError(f"{store.shown}: the store holds no run that is not excluded")
    return pick["id"], why(newer)
