"""Autotune winners that persist across runs: (GPU, cuDNN backend, frontend, problem) -> plan.

The file (default `results/autotune_winners.json`, or `$HOSTBENCH_WINNERS`) holds one entry per
(environment, problem). A run that finds a valid entry for its own environment reuses the plan
index without re-tuning. Anything else is ignored with a `warnings.warn`, never an exception:

* an entry for the same problem made on another GPU / cuDNN / frontend ("foreign"),
* a plan index the graph no longer has, or a plan name that differs ("stale"),
* a malformed entry or an unreadable / corrupt file.

Everything here but `env_of` and `tuned_index` is pure Python and tested on CPU.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from cudnn_hostbench.bench.measure.runfile.files import write_text_atomic

SCHEMA = 1
ENV_VAR = "HOSTBENCH_WINNERS"


class WinnerWarning(UserWarning):
    """A stored winner that cannot be used (foreign, stale, malformed) or a bad winners file."""


@dataclass(frozen=True)
class Env:
    """What a tuned plan (or a serialized one) is only valid for."""
    gpu: str
    cudnn_backend: int
    cudnn_frontend: str

    def differs(self, other: "Env") -> list[str]:
        """Human-readable fields where `other` differs from self."""
        out = []
        for f in ("gpu", "cudnn_backend", "cudnn_frontend"):
            a, b = getattr(self, f), getattr(other, f)
            if a != b:
                out.append(f"{f} {b!r} (this run: {a!r})")
        return out


@dataclass
class Winner:
    gpu: str
    cudnn_backend: int
    cudnn_frontend: str
    problem: str
    plan_index: int
    plan_name: str
    us: float
    extra: dict = field(default_factory=dict)      # e.g. heuristic pick, worst, workspace, sweep size
    tuned_at: str = ""

    @property
    def env(self) -> Env:
        return Env(self.gpu, self.cudnn_backend, self.cudnn_frontend)

    @classmethod
    def from_dict(cls, data: dict) -> "Winner":
        req = {"gpu": str, "cudnn_backend": int, "cudnn_frontend": str, "problem": str,
               "plan_index": int, "plan_name": str, "us": (int, float)}
        for k, t in req.items():
            if k not in data:
                raise ValueError(f"missing {k!r}")
            if not isinstance(data[k], t) or isinstance(data[k], bool):
                raise ValueError(f"{k!r} is {type(data[k]).__name__}, not {getattr(t, '__name__', t)}")
        if data["plan_index"] < 0:
            raise ValueError(f"negative plan_index {data['plan_index']}")
        extra = data.get("extra") or {}
        if not isinstance(extra, dict):
            raise ValueError("'extra' is not an object")
        return cls(data["gpu"], data["cudnn_backend"], data["cudnn_frontend"], data["problem"], data["plan_index"],
                   data["plan_name"], float(data["us"]), extra, str(data.get("tuned_at", "")))


def default_path(root: str | os.PathLike = ".") -> Path:
    """$HOSTBENCH_WINNERS, else results/autotune_winners.json under the project folder `root`."""
    p = os.environ.get(ENV_VAR)
    return Path(p) if p else Path(root) / "results" / "autotune_winners.json"


def _warn(msg: str) -> None:
    warnings.warn(msg, WinnerWarning, stacklevel=3)


class WinnerStore:
    """The winners file, loaded once; `record` rewrites it atomically."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.entries: list[Winner] = []
        self._load()

    def _load(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        except OSError as e:
            _warn(f"winners file {self.path} unreadable ({e}); starting empty")
            return
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            _warn(f"winners file {self.path} is not valid JSON (truncated or corrupt? {e.msg} at line "
                  f"{e.lineno}); ignoring it, it will be rewritten")
            return
        if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list):
            _warn(f"winners file {self.path} has no 'entries' list; ignoring it")
            return
        if doc.get("schema") != SCHEMA:
            _warn(f"winners file {self.path} has schema {doc.get('schema')!r}, expected {SCHEMA}; ignoring it")
            return
        for i, d in enumerate(doc["entries"]):
            try:
                if not isinstance(d, dict):
                    raise ValueError("not an object")
                self.entries.append(Winner.from_dict(d))
            except ValueError as e:
                _warn(f"winners file {self.path}: entry {i} malformed ({e}); ignored")

    # -- queries ------------------------------------------------------------------------------
    def find(self, env: Env, problem: str) -> Winner | None:
        """The entry for exactly this environment and problem, unchecked."""
        for w in self.entries:
            if w.problem == problem and w.env == env:
                return w
        return None

    def lookup(self, env: Env, problem: str, plan_count: int,
               name_at: Callable[[int], str] | None = None) -> Winner | None:
        """A winner this run may reuse, or None (with a warning saying why, when one was found)."""
        w = self.find(env, problem)
        if w is None:
            others = [o for o in self.entries if o.problem == problem]
            if others:
                diffs = "; ".join(", ".join(env.differs(o.env)) for o in others[:3])
                _warn(f"winner for {problem!r} was tuned elsewhere ({diffs}); ignored, re-tuning")
            return None
        if not 0 <= w.plan_index < plan_count:
            _warn(f"stale winner for {problem!r}: plan index {w.plan_index} out of range for "
                  f"{plan_count} plan(s); ignored, re-tuning")
            return None
        if name_at is not None:
            try:
                name = name_at(w.plan_index)
            except Exception as e:  # noqa: BLE001 - the graph cannot name it: treat as stale
                _warn(f"stale winner for {problem!r}: plan {w.plan_index} cannot be named ({e}); ignored")
                return None
            if name != w.plan_name:
                _warn(f"stale winner for {problem!r}: plan {w.plan_index} is now {name!r}, "
                      f"was {w.plan_name!r}; ignored, re-tuning")
                return None
        return w

    # -- updates ------------------------------------------------------------------------------
    def record(self, env: Env, problem: str, plan_index: int, plan_name: str, us: float,
               extra: dict | None = None, save: bool = True) -> Winner:
        w = Winner(env.gpu, int(env.cudnn_backend), env.cudnn_frontend, problem, int(plan_index),
                   str(plan_name), float(us), dict(extra or {}),
                   _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
        self.entries = [o for o in self.entries if not (o.problem == problem and o.env == env)]
        self.entries.append(w)
        if save:
            self.save()
        return w

    def save(self) -> Path:
        """Atomic rewrite (temp file + rename), so a crash never leaves half a file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        doc = {"schema": SCHEMA, "entries": [asdict(w) for w in sorted(
            self.entries, key=lambda w: (w.problem, w.gpu, w.cudnn_backend, w.cudnn_frontend))]}
        return write_text_atomic(self.path, json.dumps(doc, indent=1, sort_keys=True, default=str))


# -- GPU side ------------------------------------------------------------------------------------
def env_of(ctx) -> Env:
    """This process's environment: GPU name, cuDNN backend version, frontend version."""
    torch, cudnn = ctx.torch, ctx.cudnn
    return Env(torch.cuda.get_device_name(ctx.device), int(cudnn.backend_version()),
               str(getattr(cudnn, "__version__", "?")))


def tuned_index(ctx, graph, problem: str, tune: Callable[[], tuple], store: WinnerStore | None = None,
                name_at: Callable[[int], str] | None = None) -> tuple[int, str]:
    """The plan index to pin for `problem`: a valid stored winner, else `tune()` and record it.

    tune() -> (index, name, us, extra). Returns (index, 'stored' | 'tuned').
    """
    store = store if store is not None else WinnerStore(default_path(ctx.options.root))
    env = env_of(ctx)
    try:
        count = graph.get_execution_plan_count()
    except Exception:  # noqa: BLE001
        count = 0
    if name_at is None:
        name_at = getattr(graph, "get_plan_name_at_index", None)
    w = store.lookup(env, problem, count, name_at)
    if w is not None:
        return w.plan_index, "stored"
    index, name, us, extra = tune()
    try:
        store.record(env, problem, index, name, us, extra)
    except OSError as e:  # a read-only results folder must not fail the probe
        _warn(f"cannot write winners file {store.path}: {e}")
    return index, "tuned"
