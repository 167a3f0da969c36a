"""One run judged against its history, along the flow: the store prior's rows for its figures
(calibrate.py), the history's structure (structure.py), the model's fit (model.py, its class pools
in pool.py), then the decisions on that fit (decide.py). Each step hands the next its results as
data; none calls back."""
from __future__ import annotations

from typing import Any

from cudnn_hostbench.reports.verdict import decide, model, structure


def fit(target: dict, before: list[dict], figs: dict, last: int = model.DEFAULT_LAST, prior: Any = None,
        min_own: int = model.MIN_OWN) -> model.Model:
    """The model of `target`'s history `before` (oldest first), with the store prior's pools and its
    components of the target's rows where it has them."""
    rows = prior.rows_for(figs[target["id"]]) if hasattr(prior, "rows_for") else {}
    before = before[-2 * last:]   # the runs the model keeps (Model): their structures first
    return model.Model(target, before, figs, last, prior, min_own, prior_rows=rows,
                       reference=structure.reference(before, figs))


def judge_run(target: dict, before: list[dict], after: list[dict], figs: dict, last: int = model.DEFAULT_LAST,
              prior: Any = None, fdr: float = decide.Q, history: model.Model | None = None,
              min_own: int = model.MIN_OWN, curves: bool = False) -> decide.Judged:
    """The verdicts and findings of `target` against `before` (oldest first); `after`: later runs of
    the key, for confirmation. `history`: the Model of this target's history, built once for several
    judgements of its figures (the validation's injections: `figs[target id]` changed, nothing else).
    `curves`: also the calibration z scores and power curves per class (the dashboard's figures)."""
    history = history or fit(target, before, figs, last, prior, min_own)
    history.fit_run(figs, after)
    return decide.judge(history, target, after, fdr, curves)
