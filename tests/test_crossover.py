"""The crossover sweep on CPU: where the crossover lands, the summary and plot from a records file,
and one line + exit 2 without a GPU or with bad options."""
import json

from cudnn_hostbench.scripts import cli, crossover


def _pt(size, share, status="ok"):
    return {"size": size, "status": status, "share": share, "extra_us": share * 100, "gpu_us": 100.0}


def test_crossover_is_the_first_size_from_which_every_share_stays_under():
    pts = [_pt("128", 2.0), _pt("256", 0.04), _pt("512", 0.06), _pt("1024", 0.01), _pt("2048", 0.001)]
    assert crossover.crossover(pts, 0.05) == "1024"
    assert crossover.crossover(pts[:3], 0.05) is None
    assert crossover.crossover([_pt("128", 0.01), _pt("256", 0, status="build: no")], 0.05) == "128"


def test_every_trap_names_an_existing_probe_and_its_variants():
    import importlib
    for trap, (mod, tv, fv, sizes, _) in crossover.TRAPS.items():
        p = importlib.import_module(f"cudnn_hostbench.probes.{mod}").PROBE
        assert p.variant(tv).role == "trap" and p.variant(fv).role == "fixed", trap
        assert len(sizes) >= 5


def test_report_summarises_and_plots_a_records_file(tmp_path, capsys):
    doc = {"kind": "crossover", "threshold": 0.05, "fingerprint": {"gpu_name": "NVIDIA H200"}, "traps": {
        "execute": {"trap": "generic", "fix": "ordered_pinned", "size_means": "M=N=K", "crossover": "1024",
                    "points": [_pt("256", 1.2), _pt("1024", 0.01)]},
        "wrapper": {"trap": "naive", "fix": "fixed", "size_means": "tokens", "crossover": None,
                    "points": [_pt("1x4096x4096", 3.0), _pt("4x4096x4096", 0, status="build: unsupported")]}}}
    f = tmp_path / "crossover.json"
    f.write_text(json.dumps(doc))
    assert cli.main(["crossover-plot", str(f)]) == 0
    out = capsys.readouterr().out
    assert "execute (generic vs ordered_pinned): from 1024" in out and "wrapper" in out and "not reached up to 1x4096x4096" in out
    assert (tmp_path / "crossover-NVIDIA-H200.png").read_bytes()[:4] == b"\x89PNG"


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    assert cli.main(["crossover-plot", str(bad)]) == 2
    assert crossover.main(["--traps", "nope", "--out", str(tmp_path)]) == 2
    assert crossover.main(["--out", str(tmp_path / "o")]) == 2          # this machine has no GPU
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(e.startswith("hostbench crossover") for e in err)
