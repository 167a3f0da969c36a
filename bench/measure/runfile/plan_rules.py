"""Which plan rule a figure ran under, and whether that rule is a timing race.

New runs record each variant's declared rule (Record.plan_rule). Runs from before it (measurement
versions 1 and 2) do not; for them the rule is taken from what the probes declared at that
version (their extra["plans"]) where the declaration names a timing race without doubt: a plan
pinned by pin_plan (the fastest by GPU time) or picked by the autotune sweep. Every other old row
keeps '' (unknown), and is judged as before.
"""
from __future__ import annotations

from cudnn_hostbench.bench.measure.runfile.environment import Fingerprint
from cudnn_hostbench.bench.measure.runfile.records import RACE_RULES

_PINNED = "autotuned"   # mm.pin(): every plan built, the fastest by GPU time kept
# probe -> variant -> rule, the same in measurement versions 1 and 2
_BOTH = {
    "churn": dict.fromkeys(("reuse", "new_dict", "new_output", "cache_key", "all_three"), _PINNED),
    "set_stream": dict.fromkeys(("set_once", "set_stream_same", "raw_set_stream", "query_stream",
                                 "query_and_set"), _PINNED),
    "interleave": dict.fromkeys(("cudnn_only", "alternating", "phased"), _PINNED),
    "autotune": {"best": "autotuned", "best_eager": "autotuned by eager", "worst": "slowest"},
    "measurement": {"cudnn": _PINNED},
    "ceiling": {"fixed": _PINNED, "graphed": _PINNED},   # tuned per GEMM shape (winners file)
}
# version 1: trap 2's fixes and the fixed wrapper ran the autotuned plan (issue 20 moved them to one plan)
_ONLY = {
    1: {"execute": dict.fromkeys(("pinned", "ordered_pinned", "raw_floor"), _PINNED),
        "wrapper": {"fixed": _PINNED}},
    2: {"execute": dict.fromkeys(("autotuned", "autotuned_ordered"), _PINNED),
        "wrapper": {"fixed_autotuned": _PINNED},
        # declared "pinned": mm.pin() over every plan, as the records' notes say ("autotuned by GPU time")
        "registration": dict.fromkeys(("direct", "python_fn", "custom_op", "custom_op_torch_ops",
                                       "custom_op_autograd", "library", "graphed"), _PINNED)},
}


def measurement_version(fingerprint: Fingerprint) -> int:
    """The version a run was measured with: recorded in its fingerprint since version 2; before
    that, a run from harness 0.2 (its fingerprint lists its packages, cudnn-hostbench among them)
    is version 2, and older runs are 1."""
    v = fingerprint.measurement_version
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    return 2 if "cudnn-hostbench" in (fingerprint.packages or {}) else 1


def inferred(version: int, probe: str, variant: str) -> str:
    """The rule an old run's row ran under, or '' where the declaration does not say."""
    if version not in _ONLY:
        return ""
    return _ONLY[version].get(probe, {}).get(variant) or _BOTH.get(probe, {}).get(variant, "")


def rule_of(recorded: str, version: int, probe: str, variant: str) -> str:
    return recorded or inferred(version, probe, variant)


def is_race(rule: str) -> bool:
    return rule in RACE_RULES
