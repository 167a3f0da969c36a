"""A node's GPUs and cores (bench/measure/node/placement.py), jobs one per GPU (bench/measure/node/jobs.py), and the version
matrix in parallel (version_matrix --gpus), all on CPU: GPUs are stand-ins, the suites are fake."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from cudnn_hostbench.bench.measure.node import jobs as node_jobs
from cudnn_hostbench.bench.measure.node import placement
from cudnn_hostbench.bench.measure.node import topology as node_topo
from cudnn_hostbench.bench.measure.node.placement import Gpu, NodeError

# Written for these tests in the layout of nvidia-smi's `topo -m` matrix (documented by
# `nvidia-smi topo -h` and printed in NVIDIA's DGX H100 user guide): a tab-separated header of
# device columns, then 'CPU Affinity', 'NUMA Affinity', 'GPU NUMA ID', underlined with escape
# codes; one row per device; a legend. Not captured from a machine: no GPU here.
DGX_H100 = (
    "\t\x1b[4mGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
    "GPU0\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tPXB\tSYS\t0-55,112-167\t0\t\tN/A\n"
    "GPU1\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tPXB\tSYS\t0-55,112-167\t0\t\tN/A\n"
    "GPU2\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tPXB\tSYS\t0-55,112-167\t0\t\tN/A\n"
    "GPU3\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tPXB\tSYS\t0-55,112-167\t0\t\tN/A\n"
    "GPU4\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tSYS\tPXB\t56-111,168-223\t1\t\tN/A\n"
    "GPU5\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tSYS\tPXB\t56-111,168-223\t1\t\tN/A\n"
    "GPU6\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tSYS\tPXB\t56-111,168-223\t1\t\tN/A\n"
    "GPU7\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tSYS\tPXB\t56-111,168-223\t1\t\tN/A\n"
    "NIC0\tPXB\tPXB\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\t X \tSYS\n"
    "NIC1\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tPXB\tPXB\tSYS\t X \n"
    "\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
)
# An older driver (no 'GPU NUMA ID' column), printed with spaces, NUMA node per GPU pair.
PAIRS = """        GPU0    GPU1    GPU2    GPU3    mlx5_0  CPU Affinity    NUMA Affinity
GPU0     X      NV12    SYS     SYS     PXB     0-15,32-47      0
GPU1    NV12     X      SYS     SYS     PXB     0-15,32-47      0
GPU2    SYS     SYS      X      NV12    SYS     16-31,48-63     1
GPU3    SYS     SYS     NV12     X      SYS     16-31,48-63     1
mlx5_0  PXB     PXB     SYS     SYS      X

Legend:
  X    = Self
"""
# A VM that hides its topology.
VM = ("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
      "GPU0\t X \tNV12\tN/A\tN/A\t\tN/A\nGPU1\tNV12\t X \tN/A\tN/A\t\tN/A\n")
QUERY8 = "\n".join(f"{i}, GPU-{i:08d}-aaaa-bbbb-cccc-dddddddddddd, NVIDIA H100 80GB HBM3, 00000000:{0x18 + i:02X}:00.0"
                   for i in range(8))


def h100_siblings(cpu: int) -> frozenset:
    """Hyper-thread siblings of the DGX H100 layout: CPU c and c + 112."""
    c = cpu % 112
    return frozenset({c, c + 112})


def test_cpu_lists_round_trip():
    assert node_topo.parse_cpu_list("0-3,8,10-11") == {0, 1, 2, 3, 8, 10, 11}
    assert node_topo.parse_cpu_list("N/A") == frozenset() and node_topo.parse_cpu_list("") == frozenset()
    assert placement.cpu_list_text({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11"
    assert placement.cpu_list_text(node_topo.parse_cpu_list("0-55,112-167")) == "0-55,112-167"


def test_topo_matrix_is_parsed_from_its_columns():
    topo = node_topo.parse_topo(DGX_H100)
    assert sorted(topo) == list(range(8))
    assert topo[0] == (node_topo.parse_cpu_list("0-55,112-167"), 0)
    assert topo[7] == (node_topo.parse_cpu_list("56-111,168-223"), 1)
    pairs = node_topo.parse_topo(PAIRS)
    assert pairs[1] == (node_topo.parse_cpu_list("0-15,32-47"), 0) and pairs[2][1] == 1
    assert node_topo.parse_topo(VM) == {0: (frozenset(), None), 1: (frozenset(), None)}
    assert node_topo.parse_topo("NVIDIA-SMI has failed") == {}


def fake_smi(query=QUERY8, topo=DGX_H100):
    return lambda cmd: query if "--query-gpu" in " ".join(cmd) else topo


def test_discover_takes_nvidia_smi_then_nvml_then_an_even_split():
    gpus, basis = node_topo.discover(fake_smi(), nv=False)
    assert basis == node_topo.TOPO_BASIS and len(gpus) == 8
    assert gpus[5].uuid.startswith("GPU-00000005") and gpus[5].numa == 1 and gpus[5].bus_id.endswith(":1D:00.0")

    class NV:   # NVML's calls as pynvml spells them; affinity as 64-bit words, CPU 0 in word 0's low bit
        nvmlInit = staticmethod(lambda: None)
        nvmlDeviceGetCount = staticmethod(lambda: 2)
        nvmlDeviceGetHandleByIndex = staticmethod(lambda i: i)
        nvmlDeviceGetUUID = staticmethod(lambda h: f"GPU-{h}")
        nvmlDeviceGetName = staticmethod(lambda h: b"NVIDIA H200")
        nvmlDeviceGetPciInfo = staticmethod(lambda h: type("P", (), {"busId": b"0000:18:00.0"}))
        nvmlDeviceGetCpuAffinity = staticmethod(lambda h, n: [0xF << (4 * h), 0][:n] + [0] * max(0, n - 2))
        nvmlDeviceGetNumaNodeId = staticmethod(lambda h: h)

    gpus, basis = node_topo.discover(fake_smi("", ""), nv=NV)
    assert basis == node_topo.NVML_BASIS and [sorted(g.cpus) for g in gpus] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert gpus[0].name == "NVIDIA H200" and gpus[1].numa == 1 and node_topo.mask_cpus([0, 1]) == {64}
    gpus, basis = node_topo.discover(fake_smi(QUERY8.splitlines()[0] + "\n", VM), nv=False)
    assert basis == placement.EVEN and len(gpus) == 1


def test_gpus_sharing_a_numa_node_split_its_physical_cores():
    gpus, basis = node_topo.discover(fake_smi(), nv=False)
    slots = placement.plan(gpus, basis, allowed=range(224), siblings=h100_siblings)
    seen = set()
    for s in slots:
        near = s.gpu.cpus
        assert set(s.cpus) <= near and not seen & set(s.cpus)   # its NUMA node's cores, none shared
        assert len(s.cpus) == 28 and all(h100_siblings(c) <= set(s.cpus) for c in s.cpus)   # whole cores
        seen |= set(s.cpus)
    assert slots[0].cpus[:2] == (0, 1) and 112 in slots[0].cpus and slots[4].cpus[0] == 56
    assert {s.jobs for s in slots} == {8} and [s.number for s in slots] == list(range(8))
    # a container allowed half the cores: only those are split
    slots = placement.plan(gpus, basis, allowed=[*range(0, 8), *range(56, 64)], siblings=h100_siblings)
    assert [len(s.cpus) for s in slots] == [2] * 8 and set(slots[4].cpus) <= set(range(56, 64))
    # two cores for four GPUs of a NUMA node: one line naming the GPU left without one
    with pytest.raises(NodeError, match=r"^GPU \d \(GPU-0000000\d.*no CPU core of its own"):
        placement.plan(gpus, basis, allowed=[0, 1, 56, 57], siblings=h100_siblings)


def test_without_affinity_the_allowed_cores_split_evenly():
    gpus = [Gpu(0, "GPU-a"), Gpu(1, "GPU-b", cpus=frozenset({0, 1}))]
    slots = placement.plan(gpus, node_topo.TOPO_BASIS, allowed=range(6), siblings=lambda c: frozenset({c}))
    assert [s.cpus for s in slots] == [(0, 1, 2), (3, 4, 5)] and slots[0].basis == placement.EVEN
    # masks that overlap without being equal cannot be split per NUMA node either
    odd = [Gpu(0, cpus=frozenset({0, 1, 2})), Gpu(1, cpus=frozenset({2, 3}))]
    plan = placement.plan(odd, node_topo.TOPO_BASIS, allowed=range(4), siblings=lambda c: frozenset({c}))
    assert plan[0].basis == placement.EVEN


def test_select_and_subset_keep_each_gpus_cores_from_the_whole_plan():
    gpus, basis = node_topo.discover(fake_smi(), nv=False)
    slots = placement.plan(gpus, basis, allowed=range(224), siblings=h100_siblings)
    picked = placement.select(gpus, f"5,{gpus[2].uuid}")
    assert [g.index for g in picked] == [5, 2]
    assert [s.cpus for s in placement.subset(slots, picked)] == [slots[2].cpus, slots[5].cpus]
    assert [(s.number, s.jobs) for s in placement.subset(slots, picked)] == [(2, 2), (5, 2)]   # two run at once
    with pytest.raises(NodeError, match="GPU 9: not on this node"):
        placement.select(gpus, "9")
    plan = placement.node_plan("1", run=fake_smi(), nv=False, allowed=range(224), siblings=h100_siblings)
    assert len(plan.slots) == 1 and plan.slots[0].cpus == slots[1].cpus
    assert "GPU 1 (GPU-00000001" in "\n".join(plan.lines()) and "NUMA node 0" in plan.lines()[1]
    with pytest.raises(NodeError, match="no GPU found"):
        placement.node_plan(run=lambda cmd: "", nv=False)


def test_the_users_cuda_visible_devices_limits_the_node(monkeypatch):
    gpus, basis = node_topo.discover(fake_smi(), nv=False)
    assert [g.index for g in placement.visible(gpus, {"CUDA_VISIBLE_DEVICES": "6,GPU-00000002"})] == [2, 6]
    assert placement.visible(gpus, {}) == gpus and placement.visible(gpus, {"CUDA_VISIBLE_DEVICES": ""}) == []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    plan = placement.node_plan(run=fake_smi(), nv=False, allowed=range(224), siblings=h100_siblings)
    # GPUs 4 and 5 share NUMA node 1: each gets half of it
    assert [s.gpu.index for s in plan.slots] == [4, 5] and [len(s.cpus) for s in plan.slots] == [56, 56]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "9")
    with pytest.raises(NodeError, match=r"^CUDA_VISIBLE_DEVICES=9: leaves none of the node's GPUs \(0, 1, 2"):
        placement.node_plan(run=fake_smi(), nv=False)


def test_a_jobs_environment_names_its_gpu_and_place_and_keeps_multicast_off():
    slot = placement.Slot(Gpu(3, "GPU-xyz"), (8, 9), node_topo.TOPO_BASIS, jobs=8, number=3)
    env = placement.gpu_env({"PATH": "/bin", "NCCL_NVLS_ENABLE": "1"}, slot)
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-xyz" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["NCCL_NVLS_ENABLE"] == "1"   # the user's own setting stands
    assert env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1" and env["NVSHMEM_DISABLE_NVLS"] == "1"
    assert env["OMP_NUM_THREADS"] == "2" and env["PATH"] == "/bin"
    assert placement.job_fields(env) == {"slot": 3, "jobs": 8, "gpu": "GPU-xyz", "cpus": "8-9", "basis": node_topo.TOPO_BASIS}
    assert placement.job_fields({}) == {}


def test_a_pinned_command_and_its_children_run_on_its_cores_only():
    cpu = sorted(os.sched_getaffinity(0))[-1]
    child = "import os, subprocess, sys; print(sorted(os.sched_getaffinity(0))); sys.stdout.flush(); " \
            "subprocess.run([sys.executable, '-c', 'import os; print(sorted(os.sched_getaffinity(0)))'])"
    out = subprocess.run(placement.pinned([sys.executable, "-c", child], [cpu]), capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == [f"[{cpu}]", f"[{cpu}]"]


def test_the_fingerprint_says_a_run_was_one_job_of_a_node(monkeypatch):
    from cudnn_hostbench.bench.measure.runfile import fingerprint
    assert "node_job" not in fingerprint.host_fingerprint()
    monkeypatch.setenv(placement.NODE_ENV, "1/2;GPU-b;1;nvidia-smi topo -m")
    assert fingerprint.host_fingerprint()["node_job"] == {"slot": 1, "jobs": 2, "gpu": "GPU-b", "cpus": "1",
                                                       "basis": "nvidia-smi topo -m"}


# -- jobs over slots ------------------------------------------------------------------------------

def slots_of(n: int) -> list:
    return [placement.Slot(Gpu(i, f"GPU-{i}"), (i,), placement.EVEN, n, i) for i in range(n)]


def test_jobs_run_one_per_gpu_at_a_time_and_a_failure_stays_its_own():
    slots = slots_of(3)
    busy, most, lock = {}, [0], threading.Lock()

    def work(job, slot):
        with lock:
            busy[slot.gpu.index] = busy.get(slot.gpu.index, 0) + 1
            assert busy[slot.gpu.index] == 1   # one job per GPU at a time
            most[0] = max(most[0], sum(busy.values()))
        time.sleep(0.05)
        with lock:
            busy[slot.gpu.index] -= 1
        if job.name == "fe 1.28.0":
            raise RuntimeError("libcudnn.so.9: cannot open shared object file\n(more)")
        return {"ran_on": slot.gpu.index}

    jobs = [node_jobs.Job(f"fe 1.{v}.0") for v in (20, 26, 28, 31, 32)]
    jobs.append(node_jobs.Job("fe 9.9.9", gpu=7))   # a GPU not among the slots: fails, nothing run
    seen = []
    results = node_jobs.run_jobs(jobs, slots, work, done=lambda j, s, r: seen.append(j.name))
    assert [r["job"] for r in results] == [j.name for j in jobs]
    assert [r["ran_on"] for r in results[:3] if "ran_on" in r] == [0, 1]   # the fixed first wave
    assert results[2]["status"] == "failed" and results[2]["gpu"]["index"] == 2
    assert [r["status"] for r in results] == ["ok", "ok", "failed", "ok", "ok", "failed"]
    assert most[0] == 3 and len(seen) == 5
    assert node_jobs.failure_line(results[2]) == \
        "GPU 2 (GPU-2): fe 1.28.0: failed: RuntimeError: libcudnn.so.9: cannot open shared object file (more)"
    assert node_jobs.failure_line(results[5]).startswith("GPU 7: fe 9.9.9: failed: that GPU is not among")
    # a job bound to a GPU waits for it; the rest take any slot
    order = node_jobs.run_jobs([node_jobs.Job("a", gpu=1), node_jobs.Job("b"), node_jobs.Job("c", gpu=1)],
                               slots[:2], lambda j, s: {"on": s.gpu.index})
    assert [r["on"] for r in order] == [1, 0, 1]


# -- the version matrix in parallel ------------------------------------------------------------------

# Each version marks its start beside the probe file and waits (up to 60 s) for the other version's
# mark: run in parallel both pass at once; run one after the other, the first waits out its 60 s
# alone and the spans cannot overlap. Start-up times on a loaded CI host do not matter.
PROBE = '''
import json, os, time, cudnn
from pathlib import Path

def test_where(benchmark):
    here = Path(__file__).resolve().parent
    t0 = time.time()
    (here / f"started-{cudnn.__version__}").write_text("")
    while len(list(here.glob("started-*"))) < 2 and time.time() - t0 < 60:
        time.sleep(0.05)
    time.sleep(0.2)
    where = {"gpu": os.environ.get("CUDA_VISIBLE_DEVICES"), "cpus": sorted(os.sched_getaffinity(0)),
             "nvls": os.environ.get("NCCL_NVLS_ENABLE"), "span": [t0, time.time()], "fe": cudnn.__version__}
    benchmark.extra_info.update(probe="fake", variant="torch_mm", size="256", mode="graph", note=json.dumps(where))
    benchmark.pedantic(lambda: None, rounds=6, iterations=1)
'''


def two_gpus(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    cpus = sorted(os.sched_getaffinity(0))
    halves = [cpus[: max(1, len(cpus) // 2)], cpus[max(1, len(cpus) // 2):] or cpus[:1]]
    gpus = [Gpu(i, f"GPU-fake{i}", "Fake GPU", cpus=frozenset(h), numa=i) for i, h in enumerate(halves)]
    monkeypatch.setattr(placement, "discover", lambda *a, **k: (gpus, node_topo.TOPO_BASIS))
    return gpus


@pytest.mark.slow
@pytest.mark.newest_only
def test_version_matrix_runs_one_version_per_gpu_in_parallel(tmp_path, monkeypatch, capsys):
    from cudnn_hostbench.bench.measure.runfile.records import load_run
    from cudnn_hostbench.scripts import version_matrix as vm
    from tests.test_compare import fake_wheel
    gpus = two_gpus(monkeypatch)
    wheels, root, out = tmp_path / "wheels", tmp_path / "repo", tmp_path / "out"
    wheels.mkdir()
    (root / "probes").mkdir(parents=True)
    (root / "probes" / "test_probe.py").write_text(PROBE)
    for v in ("1.10.0", "1.12.0"):
        fake_wheel(wheels, v, f'__version__ = "{v}"\ndef backend_version(): return 91000\n')
    fake_wheel(wheels, "1.11.0", 'raise ImportError("libcudnn.so.9: cannot open shared object file")')
    common = ["--wheels", str(wheels), "--out", str(out), "--root", str(root), "--target-root", str(tmp_path / "t"),
              "--store", "off"]
    capsys.readouterr()
    assert vm.main([*common, "--gpus", "all"]) == 2   # a failed version: exit 2, the others kept
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hostbench matrix: GPU ") and "(GPU-fake" in err[0]
    assert "fe 1.11.0: import failed" in err[0]
    doc = json.loads((out / "matrix.json").read_text())
    assert [e["label"] for e in doc["versions"]] == ["1.10.0", "1.11.0", "1.12.0"]
    assert doc["wall_s"] > 0 and [g["uuid"] for g in doc["node"]["gpus"]] == ["GPU-fake0", "GPU-fake1"]
    ran = {}
    for e in doc["versions"]:
        if e["status"] == "ok":
            where = json.loads(load_run(out / e["run_file"]).records[0].note)
            g = next(g for g in gpus if g.index == e["gpu"]["index"])
            assert where["gpu"] == g.uuid and set(where["cpus"]) == set(g.cpus) and where["nvls"] == "0"
            assert where["fe"] == e["version"] and e["gpu"]["cpus"] == placement.cpu_list_text(g.cpus)
            ran[e["version"]] = where["span"]
    assert sorted(ran) == ["1.10.0", "1.12.0"]
    md = (out / "matrix.md").read_text()
    assert "| fake | torch_mm | graph | 256 |" in md and "## Where each version ran" in md
    assert "| 1.11.0 | 1 | GPU-fake1 |" in md
    # the first wave put 1.10.0 and 1.11.0 on the two GPUs at once: 1.12.0 took the GPU 1.11.0 freed
    # while 1.10.0 was still running
    (a0, a1), (b0, b1) = ran["1.10.0"], ran["1.12.0"]
    assert b0 < a1 and a0 < b1
    # the serial matrix now records its wall time too
    assert vm.main([*common, "--serial", "--only", "1.10.0", "--out", str(tmp_path / "serial")]) == 0
    assert json.loads((tmp_path / "serial" / "matrix.json").read_text())["wall_s"] > 0


def test_version_matrix_gpus_that_do_not_exist_are_one_line(tmp_path, monkeypatch, capsys):
    from cudnn_hostbench.scripts import version_matrix as vm
    from tests.test_compare import fake_wheel
    two_gpus(monkeypatch)
    (tmp_path / "w").mkdir()
    fake_wheel(tmp_path / "w", "1.10.0", '__version__ = "1.10.0"\n')
    assert vm.main(["--wheels", str(tmp_path / "w"), "--out", str(tmp_path / "o"), "--gpus", "5"]) == 2
    assert capsys.readouterr().err.strip() == "hostbench matrix: --gpus 5: GPU 5: not on this node (it has 0, 1)"
