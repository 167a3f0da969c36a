"""Synthetic worker processes for the A/B job's CPU tests: records shaped as a GPU worker writes
them, with a process offset shared by a process's rows (the clock, the host), heavy-tailed
process noise per row (t, 4 df) and round noise, so a job can run on CPU end to end."""
from __future__ import annotations

import json
import math
import random
from pathlib import Path

# (probe, variant, size, mode, role, µs); the baseline of each block is torch_mm
ROWS = [(p, v, s, m, "baseline" if v == "torch_mm" else "trap", us * (1.0 if v == "torch_mm" else f))
        for p in ("execute", "wrapper", "churn") for s, us in (("256", 9.0), ("4096", 240.0))
        for v, f in (("torch_mm", 1.0), ("generic", 1.2), ("pinned", 1.05)) for m in ("eager", "graph", "device")]
SIGMA = {"eager": 0.02, "graph": 0.008, "device": 0.004}   # process-to-process, per row
GPU_BOUND_EAGER = 0.25   # an eager call the GPU paces spreads about a quarter of a host-bound one's


def sigma(mode: str, us: float) -> float:
    return SIGMA[mode] * (GPU_BOUND_EAGER if mode == "eager" and us >= 100 else 1.0)


def cases(root: str = "/p") -> list:
    return [[f"{root}/probes/probe_{p}.py", p, s, v, m] for p, v, s, m, _, _ in ROWS]


def write_proc(folder: Path, cases_: list, seed: int, shift: dict | None = None, kernels: dict | None = None,
               host_state: str = "fast", rounds: int = 8) -> dict:
    """records.jsonl and done.json of one finished process timing `cases_`; `shift` {row key: log
    change} makes this process's side differ, `kernels` {row key: names} names its kernels."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    offset = {m: rng.gauss(0, s / 2) for m, s in SIGMA.items()}
    want = {(c[1], c[3], c[2], c[4]) for c in cases_}
    lines = []
    for p, v, s, m, role, us in ROWS:
        key = (p, v, s, m)
        # every row's draws are made, timed or not: a process's figures do not depend on the selection
        noise = sigma(m, us) * rng.gauss(0, 1) / math.sqrt(2) * (1 if rng.random() > 0.1 else 3)   # a heavy tail
        level = us * math.exp(offset[m] + noise + (shift or {}).get(key, 0.0))
        samples = [level * math.exp(rng.gauss(0, SIGMA[m] / 3)) for _ in range(rounds)]
        if key not in want:
            continue
        rec = {"probe": p, "variant": v, "size": s, "mode": m, "role": role, "unit": "us/call", "samples": samples,
               "baseline": "torch_mm", "host_state": host_state if m == "eager" else "",
               "kernel_names": list((kernels or {}).get(key, ["sm90_gemm"] if m == "device" else []))}
        lines.append(json.dumps({"kind": "record", "record": rec}))
    lines.append(json.dumps({"kind": "fingerprint", "fingerprint": {"host_state": {"floor_us": 0.8}, "gpu": "fake"}}))
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "job.json").write_text(json.dumps({"worker": "1/3", "out": str(folder), "cases": cases_}))
    done = {"rc": 0, "wall_s": 1.0, "error": "", "worker": "1/3"}
    (folder / "done.json").write_text(json.dumps(done))
    return done
