"""The README, docs/compare.md, docs/results/h200.md and docs/architecture.md state what the code does:
texts held to the code's own constants and modules."""
import re
from pathlib import Path

from cudnn_hostbench.reports import marks_text, table
from cudnn_hostbench.reports.verdict import decide
from cudnn_hostbench.scripts import cli

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
COMPARE_MD = (ROOT / "docs" / "compare.md").read_text(encoding="utf-8")
RESULTS_MD = (ROOT / "docs" / "results" / "h200.md").read_text(encoding="utf-8")
ARCHITECTURE_MD = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def between(text: str, name: str) -> list[str]:
    return re.findall(rf"<!-- {name} -->(.*?)<!-- /{name} -->", text, re.S)


def test_practical_thresholds_come_from_the_model():
    for text in (README, COMPARE_MD):
        found = between(text, "thresholds")
        assert found and all(" ".join(f.split()) == decide.practical_text() for f in found)
    for cls, t in decide.PRACTICAL.items():
        assert f"{cls} {t * 100:g} %" in decide.practical_text()


def test_readme_marks_are_the_trust_marks_and_d_marks_no_figure():
    (marks,) = between(README, "marks")
    assert " ".join(marks.split()) == marks_text.short_legend()
    assert "d:" not in marks


def test_results_brackets_and_table_brackets_are_each_stated():
    (text,) = between(RESULTS_MD, "brackets")
    assert "min–max over the worker processes" in text and "interquartile range" in text
    assert "workers min–max)" in RESULTS_MD       # the headline caption says it too
    assert "[min–max" not in RESULTS_MD and "[min–max" not in README   # brackets mean q1–q3 only
    import pandas as pd
    empty = pd.DataFrame({"probe": [], "baseline": []})
    assert "interquartile range" in table.RATIO_BRACKET and table.RATIO_BRACKET in table.key_text(empty)


def test_compare_doc_names_every_option_and_exit_code():
    p = cli.parser()
    sub = next(a for a in p._actions if a.dest == "command").choices["compare"]
    shown = {o for a in sub._actions for o in a.option_strings if a.help != "==SUPPRESS=="}
    shown -= {"-h", "--help"}
    missing = sorted(o for o in shown if o not in COMPARE_MD)
    assert not missing, f"docs/compare.md does not name {missing}"
    for code in ("- 0:", "- 1:", "- 2:", "- 130:"):
        assert code in COMPARE_MD
    assert "µs above the baseline" not in COMPARE_MD and "probe/variant · mode · size" not in COMPARE_MD


def test_architecture_names_every_verdict_module_and_command_module():
    for path in sorted((ROOT / "reports" / "verdict").glob("*.py")):
        if path.name != "__init__.py":
            assert path.name in ARCHITECTURE_MD, f"docs/architecture.md does not name reports/verdict/{path.name}"
    assert "scripts/cli.py" in ARCHITECTURE_MD and "COMMANDS" in ARCHITECTURE_MD


def test_architecture_names_only_paths_that_exist():
    """Every folder and file docs/architecture.md draws is there: each path from a top folder, and
    each module it names by its file name alone; and every package of the engine, the reports and
    the commands is drawn."""
    import re
    path = r"(?<![\w/.-])((?:bench|reports|scripts|probes|tests|docs)/[\w./*<>-]*[\w*>]/?)"
    missing = [p for p in re.findall(path, ARCHITECTURE_MD)
               if "*" not in p and "<" not in p and not (ROOT / p).exists()]
    names = {f.name for top in ("bench", "reports", "scripts", "probes", "tests") for f in (ROOT / top).rglob("*")}
    written = ("job.json", "run.json", "pairs.json", "ab-job.json", "ab.json", "host_trace.json")   # files a run writes
    missing += [n for n in set(re.findall(r"(?<![\w./-])([a-z_][\w-]*\.(?:py|json|sh))\b", ARCHITECTURE_MD))
                if n not in names and not (ROOT / n).exists() and n not in written]
    assert not missing, f"docs/architecture.md names what does not exist: {sorted(set(missing))}"
    packages = [d.parent.relative_to(ROOT).as_posix() for top in ("bench/measure", "reports", "scripts")
                for d in (ROOT / top).rglob("__init__.py") if "reference" not in d.parts and "migrations" not in d.parts]
    undrawn = [d for d in packages if d.rsplit("/", 1)[-1] + "/" not in ARCHITECTURE_MD]
    assert not undrawn, f"packages docs/architecture.md does not draw: {undrawn}"
