"""Every probe's declarations, on CPU: its variants, baseline and sizes, the variant names its
build code returns, and the probe/variant names the audit rules cite."""
import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

from cudnn_hostbench import probes
from cudnn_hostbench.bench.audit import rules
from cudnn_hostbench.bench.measure.core.options import SuiteOptions
from cudnn_hostbench.bench.measure.probe import Probe

MODULES = sorted(m.name for m in pkgutil.iter_modules(probes.__path__) if m.name.startswith("probe_"))
CASE_DICTS = {"cases", "out"}    # the names probes' build code gathers its cases in
DYNAMIC = "<f-string>"


def _probe(name) -> Probe:
    return importlib.import_module(f"cudnn_hostbench.probes.{name}").PROBE


def _keys(tree) -> set:
    """String keys of the dicts build code returns or fills: returned dict literals, dicts assigned
    to or merged into `cases`/`out`, and `cases["x"] = ...` stores."""
    keys = set()

    def literal(d):
        if isinstance(d, ast.Dict):
            keys.update(k.value for k in d.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))

    def store(t):
        if isinstance(t, ast.Tuple):
            for e in t.elts:
                store(e)
        elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in CASE_DICTS \
                and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str):
            keys.add(t.slice.value)
        elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in CASE_DICTS \
                and isinstance(t.slice, ast.JoinedStr):
            keys.add(DYNAMIC)   # f-string keys (one row per plan index): names known only at run time
    for node in ast.walk(tree):
        if isinstance(node, ast.Return):
            literal(node.value)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                store(t)
                if isinstance(t, ast.Name) and t.id in CASE_DICTS:
                    literal(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in CASE_DICTS:
            for a in node.args:
                literal(a)
    return keys


def test_every_probe_module_is_found():
    assert len(MODULES) >= 15


@pytest.mark.parametrize("name", MODULES)
def test_declarations(name):
    mod = importlib.import_module(f"cudnn_hostbench.probes.{name}")
    p = mod.PROBE
    assert name == f"probe_{p.name}" and p.doc
    names = [v.name for v in p.variants]
    assert len(names) == len(set(names)), f"{p.name}: duplicate variant names"
    baselines = [v.name for v in p.variants if v.role == "baseline"]
    # a probe of floors only (noop) declares no baseline; every other has exactly one, and names it
    assert baselines == ([] if p.baseline is None else [p.baseline]), f"{p.name}: baseline variants {baselines}"
    for opts in (SuiteOptions(), SuiteOptions(heavy=True), SuiteOptions(sizes=("256",), tokens=("256",))):
        sizes = p.sizes(opts)
        assert sizes and all(isinstance(s, str) and s for s in sizes), f"{p.name}: no sizes for {opts}"
    host_only = {v.name for v in p.variants if set(v.modes) <= {"host"}}
    if "measure" in p.extra or host_only:
        assert host_only <= {v.name for v in p.variants if "host" in v.modes} and "measure" in p.extra, \
            f"{p.name}: host rows without a measure() to make them"
    keys = _keys(ast.parse(inspect.getsource(mod)))
    dynamic = DYNAMIC in keys
    keys.discard(DYNAMIC)
    assert keys <= set(names), f"{p.name}: build returns undeclared variants {sorted(keys - set(names))}"
    built = set(names) - host_only
    if (keys or built) and not dynamic:
        assert built <= keys, f"{p.name}: declared variants no build code returns: {sorted(built - keys)}"


def test_audit_rules_cite_existing_probes_and_variants():
    by_name = {_probe(m).name: _probe(m) for m in MODULES}
    cited = [src for rule in rules.RULES for part in rule.parts for src in part if isinstance(src, rules.Figure)]
    assert cited
    for src in cited:
        assert src.probe in by_name, f"audit rule cites probe {src.probe!r}, which does not exist"
        p = by_name[src.probe]
        for v in (src.trap, *src.fixed):
            assert v in {x.name for x in p.variants}, f"audit rule cites {src.probe}/{v}, which does not exist"
            assert src.mode in p.variant(v).modes, f"audit rule cites {src.probe}/{v} in mode {src.mode}"
        assert src.size in p.sizes(SuiteOptions()), f"audit rule cites size {src.size} that {src.probe} does not run"


def test_probes_folder_has_no_other_modules():
    files = {f.stem for f in Path(probes.__path__[0]).glob("*.py")} - {"__init__"}
    assert files == set(MODULES)


def test_focus_probes_are_the_trap_probes_whose_256_ratios_are_the_headline():
    focus = {_probe(m).name: _probe(m) for m in MODULES if _probe(m).focus}
    assert set(focus) == {"execute", "set_stream", "churn", "transpose", "interleave", "wrapper"}
    for p in focus.values():
        roles = {v.role for v in p.variants}
        assert {"trap", "fixed"} <= roles and p.baseline, p.name
        assert p.focus_size(SuiteOptions()) in ("256", "t256"), p.name


CALL = {"eager", "graph", "device"}


def _call_variants(p, role):
    return {v.name for v in p.variants if v.role == role and set(v.modes) & CALL}


@pytest.mark.parametrize("name", MODULES)
def test_trap_fix_pairs_state_whether_they_share_the_plan(name):
    """Where a probe times a trap against a fix, each trap names its fix and whether both run the
    same plan; a pair that does not share it says why or shows the engine effect as its own row."""
    p = _probe(name)
    traps, fixes = _call_variants(p, "trap"), _call_variants(p, "fixed")
    pairs = p.extra.get("pairs", [])
    if not (traps and fixes):
        assert not pairs, f"{p.name}: pairs without a timed trap and fix"
        return
    plans = p.extra.get("plans", {})
    names = {v.name for v in p.variants}
    assert {pr[0] for pr in pairs} >= traps, f"{p.name}: traps with no declared fix: {sorted(traps - {pr[0] for pr in pairs})}"
    engine_rows = p.extra.get("engine_rows", [])
    for pr in pairs:
        trap, fix, shares = pr[:3]
        assert trap in traps and fix in fixes and isinstance(shares, bool), f"{p.name}: bad pair {pr}"
        assert trap in plans and fix in plans, f"{p.name}: {trap}/{fix} do not say which plan they run"
        assert shares == (plans[trap] == plans[fix]), f"{p.name}: {trap}/{fix} declared shares={shares}"
        if not shares:
            assert len(pr) == 4 and pr[3], f"{p.name}: {trap}/{fix} run different plans and say not why"
    for same, other in engine_rows:
        assert {same, other} <= names and plans[same] != plans[other], f"{p.name}: engine row {same}/{other}"


def test_the_focus_traps_share_the_plan_with_their_fix():
    """The headline's call-path ratios must not carry an engine effect (issue 20)."""
    for m in ("probe_execute", "probe_wrapper", "probe_set_stream", "probe_churn", "probe_interleave"):
        p = _probe(m)
        assert all(pr[2] for pr in p.extra["pairs"]), p.name
