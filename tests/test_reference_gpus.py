"""Each GPU's committed reference: a run file stored compressed loads as the plain one does, and
`table`, `dashboard` and `readme-figures` take the GPU by name, refusing one with no reference in
one line."""
import gzip

import pytest

from cudnn_hostbench.bench.measure.runfile import records
from cudnn_hostbench.reports import store
from cudnn_hostbench.scripts import cli
from cudnn_hostbench.scripts.maint import readme_figures
from cudnn_hostbench.scripts.run import reference_runs


def test_a_compressed_run_file_loads_as_its_plain_bytes_do(tmp_path):
    plain = records.run_file_in(reference_runs("h200")[0].parent)
    packed = tmp_path / "run.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    a, b = records.load_run(plain), records.load_run(packed)
    assert [r.to_dict() for r in a.records] == [r.to_dict() for r in b.records] and a.fingerprint == b.fingerprint
    assert records.run_file_in(tmp_path) == packed
    assert store.run_files([tmp_path])[0] == [packed]


def test_a_corrupt_compressed_run_file_is_one_line_naming_it(tmp_path):
    bad = tmp_path / "run.json.gz"
    bad.write_bytes(gzip.compress(b'{"benchmarks": []}')[:12])
    with pytest.raises(records.RunFileError) as e:
        records.load_run(bad)
    assert str(bad) in str(e.value) and "\n" not in str(e.value)
    assert cli.main(["table", str(bad)]) == 2


def test_every_reference_gpu_renders_its_table_by_name(capsys):
    gpus = [p.parent.name for p in reference_runs()]
    assert {"h100", "h200"} <= set(gpus)
    for gpu in gpus:
        assert cli.main(["table", "--gpu", gpu, "--probe", "execute"]) == 0
        out = capsys.readouterr().out
        fp = records.load_run(reference_runs(gpu)[0]).fingerprint
        assert fp["gpu_name"] in out and "execute · 256" in out


@pytest.mark.parametrize("args", [["table", "--gpu", "b999"], ["table"], ["table", "x.json", "--gpu", "h100"],
                                  ["table", "--gpu", "../h100"], ["readme-figures", "--gpu", "b999", "--check"],
                                  ["dashboard", "--gpu", "b999", "--out", "OUT"]])
def test_a_gpu_without_a_reference_or_a_clash_is_one_line(args, tmp_path, capsys):
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_readme_figures_for_one_gpu_checks_only_its_page():
    for ref in readme_figures.references():
        assert readme_figures.documents(ref.gpu) == [ref.page]
    assert cli.main(["readme-figures", "--gpu", "h100", "--check"]) == 0


@pytest.mark.slow
def test_the_dashboard_of_a_gpu_shows_its_runs_and_names_what_it_left_out(tmp_path, capsys):
    assert cli.main(["dashboard", "--gpu", "h100", "--out", str(tmp_path / "d")]) == 0
    out, err = capsys.readouterr()
    assert "wrote" in out and (tmp_path / "d" / "index.html").is_file()
    for line in err.splitlines():   # every job kept as a report alone is named, with its table
        assert line.endswith("ab.md") and "an A/B job's report without its processes" in line
    assert "NVIDIA H100" in (tmp_path / "d" / "index.html").read_text(encoding="utf-8")


def test_two_gpu_models_are_compared_on_ratios_to_their_own_baselines_never_on_us(capsys):
    from cudnn_hostbench.reports.judge import compare
    h200, h100 = (records.load_run(reference_runs(g)[0]) for g in ("h200", "h100"))
    df = compare.compare(h200, h100, normalize=True, ratios_only=True)
    judged = df[df["mdc"].notna() & df["verdict"].isin(["SLOWER", "FASTER", "SAME", "UNSURE", "KERNEL CHANGED"])]
    assert len(judged) and all(str(u).startswith("x ") for u in judged["unit"])   # every judged figure a ratio
    assert (df[df["note"] == compare.ACROSS_MODELS]["verdict"] == "UNMEASURED").all()
    assert cli.main(["compare", str(reference_runs("h200")[0]), str(reference_runs("h100")[0]),
                     "--allow-other-gpu", "--absolute"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
