"""The import contract between the layers, read from the source (an AST walk, so an import inside a
function counts as much as one at the top):

    bench    imports nothing of reports, probes, scripts or tests
    probes   imports nothing of reports, scripts or tests
    reports  imports nothing of scripts, probes or tests
    scripts  imports nothing of tests
and no two modules import each other, directly or round a longer loop. Inside two layers, packages
keep an order too (INNER, docs/architecture.md):

    bench/measure   node < runfile < core < workers < probe.py, pytest_plugin.py
    reports         history (the store) and verdict (the model), neither importing the other
                    < judge < dashboard
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "cudnn_hostbench"
LAYERS = ("bench", "probes", "reports", "scripts")
FORBIDDEN = {
    "bench": ("reports", "probes", "scripts", "tests"),
    "probes": ("reports", "scripts", "tests"),
    "reports": ("scripts", "probes", "tests"),
    "scripts": ("tests",),
}

# package: the packages and modules it must not import (in the same layer)
_M = f"{PACKAGE}.bench.measure"
_R = f"{PACKAGE}.reports"
INNER = {
    f"{_M}.node": (f"{_M}.runfile", f"{_M}.core", f"{_M}.workers", f"{_M}.probe", f"{_M}.pytest_plugin"),
    f"{_M}.runfile": (f"{_M}.core", f"{_M}.workers", f"{_M}.probe", f"{_M}.pytest_plugin"),
    f"{_M}.core": (f"{_M}.workers", f"{_M}.pytest_plugin"),
    f"{_M}.workers": (f"{_M}.pytest_plugin",),
    f"{_R}.history": (f"{_R}.verdict", f"{_R}.judge", f"{_R}.dashboard"),
    f"{_R}.verdict": (f"{_R}.history", f"{_R}.judge", f"{_R}.dashboard"),
    f"{_R}.judge": (f"{_R}.dashboard",),
}
# the one import against that order: a waterfall part's figure may be zero or negative, and the
# trust check reads which variants are parts from the waterfall itself (inside the function)
INNER_ALLOWED = {(f"{_M}.runfile.trust", f"{_M}.core.waterfall")}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts] if parts[0] in LAYERS else parts)


def sources() -> dict[str, Path]:
    return {module_name(p): p for top in (*LAYERS, "tests") for p in sorted((ROOT / top).rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules `name` imports; `from pkg import sub` is `pkg.sub` where that is a module."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:   # relative: from the module's package upwards
                pkg = name.split(".")[:None if path.name == "__init__.py" else -1]
                pkg = pkg[:len(pkg) - node.level + 1]
                base = ".".join(pkg + ([node.module] if node.module else []))
            for a in node.names:
                found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
    return found


def graph() -> dict[str, set[str]]:
    src = sources()
    return {m: imports(m, p, set(src)) for m, p in src.items()}


def layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "tests":
        return "tests"
    return parts[1] if parts[0] == PACKAGE and len(parts) > 1 and parts[1] in LAYERS else None


def test_layers_import_only_downwards():
    wrong = []
    for m, targets in graph().items():
        for t in sorted(targets):
            if layer(t) in FORBIDDEN.get(layer(m) or "", ()):
                wrong.append(f"{m} imports {t}")
    assert not wrong, "imports across the layers' contract:\n" + "\n".join(wrong)


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def inner_wrong(g: dict[str, set[str]]) -> list[str]:
    return [f"{m} imports {t}" for m, targets in g.items() for t in sorted(targets)
            for package, banned in INNER.items()
            if within(m, package) and any(within(t, b) for b in banned) and (m, t) not in INNER_ALLOWED]


def test_packages_inside_a_layer_keep_their_order():
    """The store does not read the verdict model or the dashboard, the model not the store; the
    run file does not reach up into timing or the worker processes."""
    wrong = inner_wrong(graph())
    assert not wrong, "imports against the order inside a layer:\n" + "\n".join(wrong)


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for root in g:
        if root in index:
            continue
        work = [(root, iter(sorted(g[root] & g.keys())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w] & g.keys()))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_no_import_cycles():
    g = {m: t - {m} for m, t in graph().items()}
    assert not cycles(g), f"modules that import each other: {cycles(g)}"


def test_the_check_sees_what_it_guards():
    """A lazy import counts, and a cycle is found: the contract cannot pass by seeing nothing."""
    g = graph()
    assert "cudnn_hostbench.reports.history.db" in g["cudnn_hostbench.scripts.history_cmd"]   # inside functions
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert layer("cudnn_hostbench.reports.store") == "reports" and layer("tests.pg_server") == "tests"
    assert all(any(m == p or m.startswith(p + ".") for m in g) for p in INNER)   # every package named exists
    assert inner_wrong({f"{_R}.history.db": {f"{_R}.verdict.decide"}}) == [f"{_R}.history.db imports {_R}.verdict.decide"]


def dot(g: dict[str, set[str]], prefix: str = PACKAGE) -> str:
    """The import graph in Graphviz's format, the modules under `prefix` only (docs/layout.md)."""
    inside = sorted(m for m in g if m.startswith(prefix))
    edges = [f'  "{m}" -> "{t}";' for m in inside for t in sorted(g[m] - {m}) if t in g and t.startswith(prefix)]
    return "\n".join(["digraph imports {", *[f'  "{m}";' for m in inside], *edges, "}"])


if __name__ == "__main__":   # python tests/test_layers.py --dot [PREFIX]
    import sys
    if sys.argv[1:2] != ["--dot"]:
        sys.exit("usage: python tests/test_layers.py --dot [PREFIX]")
    print(dot(graph(), *sys.argv[2:3]))
