"""Progress lines bypass pytest's capture: the suite runs inside the first probe test, whose
captured output pytest would otherwise throw away."""
import contextlib
import subprocess
import sys
import textwrap

import pytest

from cudnn_hostbench.bench.measure.core import progress


def test_say_runs_inside_the_lifting_context(capsys):
    seen = []

    @contextlib.contextmanager
    def lift():
        seen.append("in")
        yield
        seen.append("out")

    progress.install(lift)
    try:
        progress.say("probe/256 eager")
    finally:
        progress.install(None)
    assert seen == ["in", "out"]
    assert capsys.readouterr().err == "probe/256 eager\n"


def test_plain_print_without_a_hook(capsys):
    progress.say("x")
    assert capsys.readouterr().err == "x\n"


@pytest.mark.slow
def test_a_passing_test_still_shows_the_line_and_a_childs(tmp_path):
    """With pytest's real capture manager installed, both the test's own line and a child
    process's stderr reach the terminal although the test passes."""
    (tmp_path / "test_inner.py").write_text(textwrap.dedent("""
        import subprocess, sys
        from cudnn_hostbench.bench.measure.core import progress

        def test_it(request):
            progress.install(request.config.pluginmanager.getplugin("capturemanager").global_and_fixture_disabled)
            with progress.uncaptured():
                progress.say("PROGRESS-LINE")
                subprocess.call([sys.executable, "-c", "import sys; print('CHILD-LINE', file=sys.stderr)"])
            print("CAPTURED-LINE", file=sys.stderr)
    """))
    from cudnn_hostbench import bench
    root = str(__import__("pathlib").Path(bench.__file__).resolve().parent.parent)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_inner.py")],
                       capture_output=True, text=True, cwd=tmp_path, env={**__import__("os").environ, "PYTHONPATH": root})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PROGRESS-LINE" in r.stderr and "CHILD-LINE" in r.stderr
    assert "CAPTURED-LINE" not in r.stderr + r.stdout   # the control: plain output stays captured
