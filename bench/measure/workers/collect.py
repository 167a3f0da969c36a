"""The probe cases a job measures, collected without a pytest session: what `pytest probes -k EXPR
--hb-sizes ...` would collect, as [probe file, probe, size, variant, mode] in collection order
(the own engine's case list, worker.job_for).

`-k` takes pytest's keyword expressions (`execute and not generic`), matched as pytest matches
them: a name matches when it is a substring, ignoring case, of the probe file's name, the probe's
name or the case id `size-variant-mode`.
"""
from __future__ import annotations

from pathlib import Path

from cudnn_hostbench.bench.measure.core.options import SuiteOptions


class SelectionError(ValueError):
    """A selection that cannot be read (a bad -k expression); the message says which."""


def probe_files(root: Path) -> list[Path]:
    return sorted((root / "probes").glob("probe_*.py"))


def keyword_matcher(expr: str | None):
    """A predicate over a case's names for pytest's -k expression (None: everything)."""
    if not expr:
        return lambda names: True
    try:
        from _pytest.mark.expression import Expression
        compiled = Expression.compile(expr)
    except Exception as e:  # pytest's ParseError, or a pytest without the module
        raise SelectionError(f"-k {expr!r}: {e}") from e

    def match(names: list[str]) -> bool:
        low = [n.lower() for n in names]

        def has(word: str, /, **_: object) -> bool:
            return any(word.lower() in n for n in low)
        return bool(compiled.evaluate(has))
    return match


def collect(root: Path, suite: SuiteOptions, keyword: str | None = None) -> list[list[str]]:
    """Every case of the probes under root/probes that -k keeps, in its modes (host rows always)."""
    match = keyword_matcher(keyword)
    modes = set(suite.modes) | {"host"}
    from cudnn_hostbench.bench.measure.workers.worker import load_probes
    out = []
    files = [str(p) for p in probe_files(root)]
    for f, probe in load_probes(files).items():
        path = Path(f)
        for size, variant, mode in probe.cases(suite):
            names = [path.name, probe.name, f"test_probe[{size}-{variant}-{mode}]"]
            if mode in modes and match(names):
                out.append([str(path), probe.name, size, variant, mode])
    return out
