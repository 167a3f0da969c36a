"""The README and the results page: their figures come from the committed runs, the commands and
paths they name exist, and the README stays short enough to read."""
import re
from pathlib import Path

import pytest

from cudnn_hostbench.scripts import cli
from cudnn_hostbench.scripts.maint import readme_figures

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RESULTS = ROOT / "docs" / "results" / "h200.md"   # the page with the version matrix's reading
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# the pages written for a newcomer: their links are checked below
PAGES = [README, RESULTS, ROOT / "docs" / "results" / "h100.md", ARCHITECTURE, ROOT / "docs" / "glossary.md",
         ROOT / "docs" / "install.md",
         ROOT / "log" / "README.md"]   # the engineering log's index: every entry it lists exists


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _generated(text: str) -> str:
    """The text with every generated section (between BEGIN/END markers) taken out."""
    return re.sub(r"<!-- BEGIN:(\w+) -->.*?<!-- END:\1 -->", "", text, flags=re.S)


@pytest.mark.parametrize("doc", readme_figures.documents(), ids=lambda p: p.name)
def test_figures_match_committed_runs(doc):
    old, new = readme_figures.rendered(doc)
    assert new == old, f"{doc.relative_to(ROOT)} is out of date: run `hostbench readme-figures`"


def test_each_document_has_its_sections():
    """The README carries the GPUs side by side; each results page its own GPU's sections."""
    readme = _text(README)
    assert set(readme_figures.readme_sections(readme_figures.references())) == {"gpus", "traps"}
    for name in ("gpus", "traps"):
        assert f"<!-- BEGIN:{name} -->" in readme
    for ref in readme_figures.references():
        page = _text(ref.page)
        for name in readme_figures.sections(ref):
            assert f"<!-- BEGIN:{name} -->" in page, (ref.gpu, name)
            assert f"<!-- BEGIN:{name} -->" not in readme, name


def test_every_reference_gpu_has_a_results_page_and_is_in_the_readme_tables():
    refs = readme_figures.references()
    assert len(refs) >= 2, "the README's tables set at least two GPUs side by side"
    secs = readme_figures.readme_sections(refs)
    for ref in refs:
        assert ref.page.is_file(), ref.page
        assert f"{ref.gpu.upper()} × baseline" in secs["traps"] and f"| {ref.gpu.upper()} |" in secs["gpus"]


def test_the_guides_figures_are_labelled_and_kept_apart_from_ours():
    gpus = readme_figures.readme_sections(readme_figures.references())["gpus"]
    head = gpus.splitlines()[0]
    assert head.rstrip(" |").endswith("guide's B200 figures"), head   # its own column, last, named as the guide's
    for value in readme_figures.GUIDE_B200.values():
        assert f"| {value} (" in gpus
    assert "not measured here" in gpus


def test_readme_names_its_two_commands_and_ci_runs_the_test_one():
    text = _text(README)
    for cmd in ("scripts/bench.sh", "scripts/test.sh"):
        assert cmd in text and (ROOT / cmd).exists()
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


def test_readme_is_short_and_its_own_lines_readable():
    text = _text(README)
    assert len(text) <= 12_000, f"README.md is {len(text)} characters (at most 12,000)"
    long = [line[:60] for line in _generated(text).splitlines() if len(line) > 130]
    assert not long, f"README lines over 130 characters outside the generated sections: {long}"


def test_headline_rows_are_in_every_reference_run():
    for ref in readme_figures.references():
        run = ref.load()
        for _, probe, variant in readme_figures.HEADLINE:
            rec = run.find(probe, variant, "256", "eager")
            assert rec is not None and rec.ok, (ref.gpu, probe, variant)
    shown = readme_figures.traps([(ref, ref.load()) for ref in readme_figures.references()])
    for _, probe, trap, fix in readme_figures.TRAPS:
        assert f"| {probe} " in shown and f"{trap} → {fix}" in shown, (probe, trap, fix)


def test_every_figure_the_matrix_reading_quotes_is_in_the_measured_matrix():
    """The prose reading of the version matrix is written by hand: each number it quotes must
    be one the generated matrix block shows (so a re-measured matrix cannot leave it stale)."""
    text = _text(RESULTS)
    block = text[text.index("<!-- BEGIN:versions -->"):text.index("<!-- END:versions -->")]
    reading = text[text.index("Reading the matrix"):text.index("The same matrix as a dashboard")]
    quoted = re.findall(r"\d+\.\d+", reading.replace("1.20", "").replace("1.26", "").replace("1.28", "")
                        .replace("1.31", "").replace("1.32", ""))
    assert quoted, "the reading quotes no figure"
    missing = [q for q in quoted if q not in block]
    assert not missing, f"the matrix reading quotes figures the matrix does not show: {missing}"


def _help_commands(capsys) -> list[str]:
    """The command names `hostbench --help` prints, both groups."""
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    names = re.findall(r"^  ([a-z][\w-]*) ", out, re.M)
    assert "maintainer's commands" in out and names
    return names


def test_every_command_of_hostbench_help_is_in_the_readme_or_the_architecture(capsys):
    names = _help_commands(capsys)
    assert sorted(names) == sorted(cli.ALL), "hostbench --help and the registry disagree"
    text = _text(README) + _text(ARCHITECTURE)
    missing = [n for n in names if not re.search(rf"`hostbench {re.escape(n)}[ `]", text)]
    assert not missing, f"commands with no `hostbench <cmd> ...` example in README.md or docs/architecture.md: {missing}"
    readme = _text(README)
    users = [n for n in names if n in cli.COMMANDS]
    no_example = [n for n in users if not re.search(rf"^  `hostbench {re.escape(n)}[ `]", readme, re.M)]
    assert not no_example, f"user commands without an example line in the README's list: {no_example}"


@pytest.mark.slow
def test_the_readme_history_ingest_example_runs_quietly_on_a_fresh_clone(tmp_path, monkeypatch, capsys):
    """Only committed files: no warning about a folder a fresh clone does not have (results/)."""
    examples = re.findall(r"`(hostbench history ingest [^`]+)`", _text(README))
    assert examples
    monkeypatch.setenv("HOSTBENCH_STORE", f"sqlite:///{tmp_path / 'h.db'}")
    monkeypatch.chdir(ROOT)
    for ex in examples:
        args = ex.split()[1:]
        assert all((ROOT / a).exists() for a in args[2:] if not a.startswith("-")), ex
        assert cli.main(args) == 0, ex
        err = capsys.readouterr().err
        assert not err.strip(), f"{ex}: {err}"


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_and_paths_resolve(page):
    text = _text(page)
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(target)
        elif anchor and dest.suffix == ".md":
            slugs = {_slug(h) for h in re.findall(r"^#+ (.+)$", _text(dest), re.M)}
            if anchor not in slugs:
                bad.append(target)
    # repository paths named in code spans exist (a stale script or folder name fails here)
    for path in re.findall(r"`((?:scripts|docs|reports|bench|probes|examples|ci|tests)/[\w./-]+)`", text):
        if "<" not in path and "*" not in path and not (ROOT / path).exists():
            bad.append(path)
    assert not bad, f"{page.relative_to(ROOT)}: links or paths that do not resolve: {bad}"


def test_the_user_docs_stay_within_150_kb():
    """docs/ (the user docs and each GPU's results page) within 150 KB (issue 68): runs belong in
    log/, a command's every option in its --help."""
    size = sum(p.stat().st_size for p in (ROOT / "docs").rglob("*.md"))
    assert size <= 150_000, f"docs/ is {size} bytes (at most 150,000)"
