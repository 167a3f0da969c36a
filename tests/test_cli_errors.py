"""Every command a user types: bad input exits 2 with one line on stderr naming what is wrong,
no traceback, no output and no file written or removed; a closed pipe is not an error.

Each command's first case runs the real command in a subprocess, as a user's shell would; its
other cases run it in this process as `python -m` runs it (tests/helpers.py hostbench_here).
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_hostbench.bench.measure.runfile import records
from cudnn_hostbench.bench.measure.runfile.records import Record
from tests.helpers import FINGERPRINT, hostbench_here, synthetic_records, write_synthetic_run

ROOT = Path(__file__).resolve().parents[1]


def hostbench(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudnn_hostbench.scripts.cli", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, **kw)


def snapshot(folder: Path) -> dict:
    """Every path under `folder` with a hash of its bytes (None for folders)."""
    return {str(p.relative_to(folder)): None if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))}


def jsonl(path: Path, lines: list) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    """A good run, and one bad input of each kind, in tmp_path."""
    f = {"good": write_synthetic_run(tmp_path / "good.json")}
    f["random"] = tmp_path / "random.json"
    f["random"].write_bytes(bytes(range(128, 256)) * 20)
    f["random_jsonl"] = tmp_path / "random.jsonl"
    f["random_jsonl"].write_bytes(b"\xff\xfe\x00garbage" * 50)
    f["empty_benchmarks"] = tmp_path / "empty.json"
    f["empty_benchmarks"].write_text('{"benchmarks": [], "machine_info": {"hostbench": {}}}')
    f["empty_jsonl"] = tmp_path / "empty.jsonl"
    f["empty_jsonl"].write_text("")
    f["fingerprint_only"] = jsonl(tmp_path / "crashed.jsonl", [{"kind": "fingerprint", "fingerprint": FINGERPRINT}])
    f["not_a_run"] = tmp_path / "package.json"
    f["not_a_run"].write_text('{"name": "x", "version": "1.0"}')
    f["json_list"] = tmp_path / "list.json"
    f["json_list"].write_text("[1, 2, 3]")
    f["jsonl_scalar"] = tmp_path / "scalar.jsonl"
    f["jsonl_scalar"].write_text('7\n{"kind": "record"}\n')
    f["missing"] = tmp_path / "missing.json"
    f["existing_file"] = tmp_path / "table_out"
    f["existing_file"].write_text("keep me")
    f["folder"] = tmp_path / "a_folder"
    f["folder"].mkdir()
    f["audit"] = tmp_path / "audit.json"   # a committed audit, as `hostbench audit --out` wrote it
    f["audit"].write_bytes((ROOT / "reports/reference/h200/audit-naive/audit.json").read_bytes())
    return f


# (case id, argv with {names} from the fixture, the text the one stderr line must hold)
CASES = [
    ("table-random-bytes", ["table", "{random}"], ["{random}", "not UTF-8"]),
    ("table-random-jsonl", ["table", "{random_jsonl}"], ["{random_jsonl}", "not UTF-8"]),
    ("compare-random-bytes", ["compare", "{good}", "{random}"], ["{random}", "not UTF-8"]),
    ("table-empty-benchmarks", ["table", "{empty_benchmarks}"], ["no records in {empty_benchmarks}"]),
    ("compare-empty-benchmarks", ["compare", "{empty_benchmarks}", "{good}"], ["no records in {empty_benchmarks}"]),
    ("table-empty-jsonl", ["table", "{empty_jsonl}"], ["no records in {empty_jsonl}"]),
    ("compare-empty-jsonl", ["compare", "{good}", "{empty_jsonl}"], ["no records in {empty_jsonl}"]),
    ("table-fingerprint-only", ["table", "{fingerprint_only}"], ["no records in {fingerprint_only}"]),
    ("compare-fingerprint-only", ["compare", "{good}", "{fingerprint_only}"], ["no records in {fingerprint_only}"]),
    ("table-not-a-run", ["table", "{not_a_run}"], ["{not_a_run}", "no 'benchmarks'"]),
    ("compare-not-a-run", ["compare", "{not_a_run}", "{good}"], ["{not_a_run}", "no 'benchmarks'"]),
    ("table-json-list", ["table", "{json_list}"], ["{json_list}"]),
    ("table-jsonl-scalar", ["table", "{jsonl_scalar}"], ["{jsonl_scalar}:1"]),
    ("table-missing-file", ["table", "{missing}"], ["{missing}", "cannot read"]),
    ("compare-missing-file", ["compare", "{missing}", "{good}"], ["{missing}", "cannot read"]),
    ("table-run-is-a-folder", ["table", "{folder}"], ["{folder}"]),
    ("table-out-existing-file", ["table", "{good}", "--out", "{existing_file}"], ["--out {existing_file}"]),
    ("table-out-under-a-file", ["table", "{good}", "--out", "{existing_file}/sub"], ["{existing_file}"]),
    ("table-unknown-probe", ["table", "{good}", "--probe", "nosuch"], ["'nosuch'", "execute"]),
    ("table-no-run-argument", ["table"], ["run"]),
    ("compare-markdown-to-folder", ["compare", "{good}", "{good}", "--markdown", "{folder}"],
     ["--markdown {folder}"]),
    ("compare-markdown-missing-parent", ["compare", "{good}", "{good}", "--markdown", "{folder}/no/out.md"],
     ["{folder}/no"]),
    ("compare-markdown-onto-a-run", ["compare", "{good}", "{good}", "--markdown", "{good}"],
     ["--markdown {good}", "run file"]),
    ("compare-bad-threshold", ["compare", "{good}", "{good}", "--threshold", "five"], ["--threshold", "'five'"]),
    ("compare-bad-alpha", ["compare", "{good}", "{good}", "--alpha", "5"], ["--alpha"]),
    ("compare-one-run", ["compare", "{good}"], ["new"]),
    ("reprice-missing-audit", ["reprice", "{missing}", "--run-file", "{good}"], ["{missing}", "cannot read"]),
    ("reprice-random-audit", ["reprice", "{random}", "--run-file", "{good}"], ["{random}", "not an audit.json"]),
    ("reprice-run-not-an-audit", ["reprice", "{good}", "--run-file", "{good}"], ["{good}", "not an audit.json"]),
    ("reprice-bad-run-file", ["reprice", "{audit}", "--run-file", "{empty_jsonl}"], ["no records in {empty_jsonl}"]),
    ("reprice-out-existing-file", ["reprice", "{audit}", "--run-file", "{good}", "--out", "{existing_file}"],
     ["--out {existing_file}"]),
    ("reprice-no-run-file", ["reprice", "{audit}"], ["--run-file"]),
    ("run-reference-and-more", ["run", "--reference", "--bogus"], ["--reference", "--bogus"]),
    ("lock-missing-run", ["lock", "{missing}"], ["{missing}", "cannot read"]),
    ("lock-no-run-argument", ["lock"], ["run"]),
    ("engines-random-bytes", ["engines", "{random}"], ["{random}", "not UTF-8"]),
    ("waterfall-missing", ["waterfall", "{missing}"], ["{missing}"]),
    ("crossover-plot-not-a-crossover", ["crossover-plot", "{not_a_run}"], ["{not_a_run}", "crossover"]),
    ("crossover-unknown-trap", ["crossover", "--traps", "nope", "--out", "{folder}"], ["nope"]),
    ("host-trace-bad-seconds", ["host-trace", "--seconds", "0"], ["--seconds"]),
    ("host-trace-run-missing", ["host-trace", "--run", "{missing}"], ["{missing}", "not a folder"]),
    ("host-trace-run-no-traces", ["host-trace", "--run", "{folder}"], ["{folder}", "host_trace.json"]),
    ("matrix-unknown-option", ["matrix", "--bogus"], ["--bogus"]),
    ("readme-figures-unknown-option", ["readme-figures", "--bogus"], ["--bogus"]),
    ("unknown-command", ["nosuch"], ["unknown command 'nosuch'", "--help"]),
    ("unknown-option", ["--nosuch"], ["'--nosuch'"]),
]


# the first case of each command (by its first word) runs in a subprocess
FIRST_OF_COMMAND = {next(c[0] for c in CASES if c[1][:1] == first[1][:1]) for first in CASES}


@pytest.mark.parametrize("argv,needles,process", [(*c[1:], c[0] in FIRST_OF_COMMAND) for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_input_exits_2_with_one_line(files, tmp_path, argv, needles, process):
    names = {k: str(v) for k, v in files.items()}
    before = snapshot(tmp_path)
    res = (hostbench if process else hostbench_here)(*(a.format(**names) for a in argv))
    err = res.stderr.strip().splitlines()
    assert "Traceback" not in res.stderr, res.stderr
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert res.stdout == "", "bad input must print nothing on stdout"
    assert len(err) == 1, res.stderr
    for n in needles:
        assert n.format(**names) in err[0], (n, err[0])
    assert snapshot(tmp_path) == before, "a bad input wrote or removed a file"


def big_run(path: Path) -> Path:
    """A run whose table and comparison are far longer than a pipe's buffer."""
    recs = [Record(f"p{i}", v, "256", m, samples=[10.0 + j % 3 for j in range(8)], baseline="torch_mm")
            for i in range(500) for v in ("torch_mm", "a", "b") for m in ("eager", "graph")]
    return records.write_run(path, records.run_document(recs, dict(FINGERPRINT)))


@pytest.mark.slow
@pytest.mark.parametrize("cmd", [["compare", "{run}", "{run}"], ["table", "{run}"], ["--help"]])
def test_output_into_a_closed_pipe_is_not_an_error(tmp_path, cmd):
    run = big_run(tmp_path / "big.json")
    p = subprocess.Popen([sys.executable, "-m", "cudnn_hostbench.scripts.cli", *(a.format(run=run) for a in cmd)], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.readline()  # `| head -1`: read a line, then go away
    p.stdout.close()
    err = p.stderr.read().decode()
    p.wait(timeout=120)
    assert first and "Traceback" not in err and "BrokenPipe" not in err, err
    assert p.returncode == 0, err


@pytest.mark.slow
def test_truncated_jsonl_keeps_records_and_says_one_was_lost(tmp_path):
    recs = synthetic_records(2)[:3]
    path = jsonl(tmp_path / "records.jsonl", [{"kind": "fingerprint", "fingerprint": FINGERPRINT}]
                 + [{"kind": "record", "record": r.to_dict()} for r in recs])
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"kind": "record", "rec')  # a crash mid-write
    run = records.load_run(path)
    assert len(run.records) == 3
    assert len(run.warnings) == 1 and f"{path}:5" in run.warnings[0]
    res = hostbench("table", path)
    assert res.returncode == 0 and "execute" in res.stdout
    assert res.stderr.strip().splitlines() == [f"warning: {run.warnings[0]}"]
    res = hostbench("compare", path, path)
    assert res.returncode == 0 and f"{path}:5" in res.stderr and "Traceback" not in res.stderr


def test_version_and_help(tmp_path):
    res = hostbench()  # no command: the usage, and exit 2 so a script notices
    assert res.returncode == 2 and "usage: hostbench" in res.stdout and "Traceback" not in res.stderr
    res = hostbench("--version")
    assert res.returncode == 0 and res.stdout.startswith("hostbench ") and res.stdout.split()[1][0].isdigit()
    res = hostbench("--help")
    assert res.returncode == 0 and res.stdout.rstrip().endswith("run `hostbench <cmd> --help` for a command's options")
    res = hostbench("compare", "--help")
    assert res.returncode == 0
    for word in ("SLOWER", "FASTER", "UNSURE", "SAME", "ADDED", "REMOVED", "UNMEASURED",
                 "exit status", "2 bad input", "(default: 1)", "(default: 0.01)"):
        assert word in res.stdout, word
    assert "torch.mm" not in res.stdout
    res = hostbench("table", "--help")
    assert res.returncode == 0 and "probe's baseline" in res.stdout and "ratio to torch.mm" not in res.stdout


@pytest.mark.slow
def test_good_input_still_works(files, tmp_path):
    out = tmp_path / "out"
    res = hostbench("table", files["good"], "--out", out, "--probe", "execute")
    assert res.returncode == 0 and res.stderr == ""
    assert (out / "table.csv").exists() and (out / "table.md").exists()
    md = tmp_path / "cmp.md"
    res = hostbench("compare", files["good"], files["good"], "--markdown", md)
    assert res.returncode == 0 and "| execute |" in md.read_text()
    assert not list(tmp_path.glob("*.tmp")) and not list(out.glob("*.tmp"))


@pytest.mark.slow
def test_audit_examples_script_without_a_gpu_says_so_per_example_and_exits_2(tmp_path):
    """scripts/audit_examples.sh (docs/audit.md): each example's audit one line and its log, exit 2."""
    import os
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    p = subprocess.run(["bash", str(root / "scripts" / "audit_examples.sh"), str(tmp_path / "out")],
                       capture_output=True, text=True, env=env, timeout=300)
    lines = p.stdout.strip().splitlines()
    examples = sorted(f.name.removesuffix("_integration.py") for f in (root / "examples").glob("*_integration.py"))
    assert p.returncode == 2 and len(lines) == len(examples), p.stdout + p.stderr
    assert sorted(x.split(":")[1].strip() for x in lines) == examples   # every example, each once
    assert all(": exit 2 (" in x for x in lines)
    for x in lines:     # every example's log is the one line, whether its own process said it or not
        log = Path(x.split("(", 1)[1].rstrip(")")).read_text().strip().splitlines()
        assert len(log) == 1 and log[0].startswith("hostbench audit: needs a CUDA GPU"), x
