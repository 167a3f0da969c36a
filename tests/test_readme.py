"""The README's figures come from the committed runs, and its two set-up commands exist."""
from pathlib import Path

from cudnn_hostbench.scripts import readme_figures

ROOT = Path(__file__).resolve().parent.parent


def test_readme_figures_match_committed_runs():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme_figures.render(text, readme_figures.sections()) == text, \
        "README is out of date: run `python3 -m cudnn_hostbench.scripts.readme_figures`"


def test_readme_names_its_two_commands_and_ci_runs_the_test_one():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for cmd in ("scripts/bench.sh", "scripts/test.sh"):
        assert cmd in text and (ROOT / cmd).exists()
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


def test_headline_rows_are_in_the_reference_run():
    from cudnn_hostbench.bench.measure import records
    run = records.load_run(readme_figures.REFERENCE)
    for _, probe, variant in readme_figures.HEADLINE:
        rec = run.find(probe, variant, "256", "eager")
        assert rec is not None and rec.ok, (probe, variant)


def test_every_figure_the_matrix_reading_quotes_is_in_the_measured_matrix():
    """The prose reading of the version matrix is written by hand: each number it quotes must
    be one the generated matrix block shows (so a re-measured matrix cannot leave it stale)."""
    import re
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text[text.index("<!-- BEGIN:versions -->"):text.index("<!-- END:versions -->")]
    reading = text[text.index("Reading the matrix"):text.index("The same matrix as a dashboard")]
    quoted = re.findall(r"\d+\.\d+", reading.replace("1.20", "").replace("1.26", "").replace("1.28", "")
                        .replace("1.31", "").replace("1.32", ""))
    assert quoted, "the reading quotes no figure"
    missing = [q for q in quoted if q not in block]
    assert not missing, f"the matrix reading quotes figures the matrix does not show: {missing}"
