"""What a store holds: `history list` and `history show`, exclude and include, an unknown id, a
check of an excluded run (issue 28)."""
from __future__ import annotations

from cudnn_hostbench.bench.measure.runfile import records
from cudnn_hostbench.scripts import cli
from tests.helpers import FINGERPRINT, synthetic_records, write_synthetic_run

MACHINE = {"boot_id": "boot-7", "gpu_uuid": "GPU-5e1f", "hostname": "h200-a"}


def hb(*args: str) -> int:
    return cli.main(["history", *args])


def store_of_two(tmp_path) -> str:
    """Run 1 measured before machine identity was recorded, run 2 with it."""
    url = f"sqlite:///{tmp_path / 'h.db'}"
    old = write_synthetic_run(tmp_path / "old.json", seed=1)
    fp = {**FINGERPRINT, "datetime": "2026-11-30T00:00:00+00:00", "machine": MACHINE}
    new = records.write_run(tmp_path / "new.json", records.run_document(synthetic_records(2), fp))
    assert hb("ingest", str(old), str(new), "--store", url) == 0
    return url


def test_list_names_each_run_its_machine_start_probes_and_exclusion(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    url = store_of_two(tmp_path)
    assert hb("exclude", "1", "--why", "fan failing", "--store", url) == 0
    capsys.readouterr()
    assert hb("list", "--store", url) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "2 run(s)" in lines[0] and "NVIDIA" in lines[0]   # one GPU name: said once, on top
    head, _rule, start1, one, start2, two = lines[1:]
    for col in ("id", "started (UTC)", "key", "probes", "excluded"):
        assert col in head
    # the start (boot id, GPU UUID) heads its runs once instead of filling two columns of every row
    assert start1.startswith("start unknown") and start2 == "start boot boot-7 · GPU GPU-5e1f"
    assert one.split()[:3] == ["1", "2026-11-29", "00:00"]
    assert "execute" in one and "yes: fan failing" in one
    assert "GPU-5e1f" not in two and two.rstrip().endswith("no")


def test_show_one_run_in_full(tmp_path, capsys):
    url = store_of_two(tmp_path)
    capsys.readouterr()
    assert hb("show", "2", "--store", url) == 0
    out = capsys.readouterr().out
    assert out.startswith("run 2 in sqlite:///")
    for part in ("2026-11-30T00:00:00+00:00", "NVIDIA H200, 132 SMs", "boot-7/GPU-5e1f", "frontend 1.32.0",
                 str(tmp_path / "new.json"), "19 in 1 probe(s): execute 19", "excluded       no"):
        assert part in out, part
    assert hb("show", "1", "--store", url) == 0
    assert "start          unknown" in capsys.readouterr().out


def test_an_unknown_id_says_how_to_list_the_ids(tmp_path, capsys):
    url = store_of_two(tmp_path)
    capsys.readouterr()
    for action in ("show", "exclude", "include", "check"):
        assert hb(action, "9", "--store", url) == 2
        err = capsys.readouterr().err.strip()
        assert "no run with id 9" in err and "`hostbench history list --store sqlite:///" in err and "\n" not in err


def test_include_takes_an_excluded_run_back_and_check_says_it_is_excluded(tmp_path, capsys):
    url = store_of_two(tmp_path)
    assert hb("exclude", "2", "--why", "bad night", "--store", url) == 0
    assert "`hostbench history include 2 --store" in capsys.readouterr().out
    assert hb("check", "2", "--store", url) == 0
    out = capsys.readouterr().out
    assert out.startswith("note: run 2 is excluded (bad night)")
    assert hb("include", "2", "--store", url) == 0
    assert "run 2 is back in every history" in capsys.readouterr().out
    assert hb("check", "2", "--store", url) == 0
    assert "excluded" not in capsys.readouterr().out
    assert hb("include", "2", "--store", url) == 0
    assert "was not excluded" in capsys.readouterr().out


def test_list_of_an_empty_store_and_of_one_gpu(tmp_path, capsys):
    url = store_of_two(tmp_path)
    capsys.readouterr()
    assert hb("list", "--gpu", "NVIDIA B200", "--store", url) == 0
    assert "holds no runs of NVIDIA B200" in capsys.readouterr().out
