"""One tool: every entry point is a `hostbench` command from the one registry (scripts/cli.py),
each declared once by its own module; the docs name only commands and modules that exist."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_hostbench.scripts import cli

ROOT = Path(__file__).resolve().parents[1]


def test_help_lists_every_command_with_one_line_ending_in_a_full_stop(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for name, (_, summary) in cli.ALL.items():
        row = next(line for line in lines if line.split()[:1] == [name])
        assert row.rstrip().endswith(".") and summary in row, row
    maint = lines.index(next(line for line in lines if line.startswith("maintainer's commands")))
    assert all(lines.index(next(x for x in lines if x.split()[:1] == [n])) > maint for n in cli.MAINTAINER_COMMANDS)
    assert {"waterfall", "engines", "crossover", "lock", "matrix", "host-trace"} <= set(cli.COMMANDS)
    assert "readme-figures" in cli.MAINTAINER_COMMANDS


def test_each_registered_module_declares_its_command_and_help_works(capsys):
    ap = cli.parser()
    assert set(ap.commands) == set(cli.ALL)
    for name, p in ap.commands.items():
        assert p.prog == f"hostbench {name}" and callable(p.get_default("func"))
        with pytest.raises(SystemExit) as e:
            cli.main([name, "--help"])
        assert e.value.code == 0
        assert capsys.readouterr().out.startswith(f"usage: hostbench {name}")


def test_no_module_writes_a_parser_of_its_own():
    """The python -m forms are aliases through the registry: one parser per command."""
    sources = [p for d in ("bench", "probes", "reports", "scripts") for p in (ROOT / d).rglob("*.py")]
    own = [p.relative_to(ROOT) for p in sources
           if "ArgumentParser(" in p.read_text(encoding="utf-8") and p.name != "args.py"]
    assert not own, f"argument parsers outside the registry: {own}"
    for p in sources:
        text = p.read_text(encoding="utf-8")
        if 'if __name__ == "__main__"' in text and p.name != "cli.py":
            # a report imports no scripts (tests/test_layers.py): its python -m form names the command
            ok = "alias(" in text or (p.parts[-2] == "reports" and "run `hostbench " in text)
            assert ok, f"{p.relative_to(ROOT)}: its python -m form must go through cli.alias"


def test_a_python_m_alias_is_the_registered_command():
    r = subprocess.run([sys.executable, "-m", "cudnn_hostbench.scripts.lock", "--help"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("usage: hostbench lock"), r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-m", "cudnn_hostbench.scripts.lock", "nope.json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("hostbench lock: nope.json") and len(r.stderr.splitlines()) == 1
    # a report module is no entry point (it imports no scripts): one line names the command
    r = subprocess.run([sys.executable, "-m", "cudnn_hostbench.reports.engines", "nope.json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "run `hostbench engines`" in r.stderr and len(r.stderr.splitlines()) == 1


def test_a_command_passes_on_only_what_it_declares(tmp_path, capsys):
    """run passes unknown arguments to pytest, matrix those after --, every other command refuses them."""
    with pytest.raises(SystemExit) as e:
        cli.main(["lock", "x.json", "--bogus"])
    assert e.value.code == 2 and "unrecognized arguments: --bogus" in capsys.readouterr().err
    assert cli.main(["run", "--reference", "-k", "execute"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--reference" in err[0] and "-k execute" in err[0]


def test_dashboard_help_promises_only_what_it_writes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["dashboard", "--help"])
    out = capsys.readouterr().out
    assert "index.html" in out and "img/" not in out and ".png" not in out


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("doc", DOCS, ids=[p.name for p in DOCS])
def test_docs_name_only_commands_and_modules_that_exist(doc):
    text = doc.read_text(encoding="utf-8")
    for m in re.finditer(r"python3? -m ([A-Za-z_][\w.]*)", text):
        mod = m.group(1)
        if mod.split(".")[0] in ("pip", "pytest", "venv", "ruff", "mypy"):
            continue
        assert mod.startswith("cudnn_hostbench."), f"{doc.name}: `python -m {mod}` is not a module of the package"
        rel = Path(*mod.split(".")[1:])
        assert (ROOT / f"{rel}.py").is_file(), f"{doc.name}: `python -m {mod}`: no such module"
    for m in re.finditer(r"(?:`|^)hostbench ([a-z][\w-]*)", text, re.M):
        assert m.group(1) in cli.ALL, f"{doc.name}: `hostbench {m.group(1)}` is not a command"


def test_readme_figures_outside_a_checkout_is_one_line(tmp_path, monkeypatch, capsys):
    from cudnn_hostbench.scripts.maint import readme_figures
    monkeypatch.setattr(readme_figures, "README", tmp_path / "README.md")   # as in an installed copy
    assert cli.main(["readme-figures", "--check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "maintainer's command" in err[0] and not (tmp_path / "README.md").exists()
