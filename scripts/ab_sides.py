"""The sides of an A/B job: what a side spec means, and the environment each side's processes get.

A side spec is `current`, or comma-separated parts:
    fe=VERSION | fe=PATH.whl   a frontend wheel (a version is looked up in --wheels), installed
                               into its own folder and put first on PYTHONPATH
    cudnn=DIR                  a folder holding libcudnn*.so, put first on LD_LIBRARY_PATH
    path=DIR                   your own code (a checkout, a wrapper), put first on PYTHONPATH
    env.NAME=VALUE             an environment variable
    name=LABEL                 the side's label in every report
e.g. `fe=1.31.0`, `fe=1.32.0,cudnn=/opt/cudnn-9.19/lib`, `path=../mywrapper,env.MY_FLAG=1`.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from cudnn_hostbench.bench.measure.workers.interleave import Side

CHECK = (
    "import sys\n"
    "try:\n"
    "    import cudnn\n"
    "except Exception as e:\n"
    "    print(f'the frontend does not import: {type(e).__name__}: {e}'); sys.exit(3)\n"
    "try:\n"
    "    v = cudnn.backend_version()\n"
    "except Exception as e:\n"
    "    print(f'the frontend cannot load libcudnn: {type(e).__name__}: {e}'); sys.exit(3)\n"
    "import torch\n"
    "if not torch.cuda.is_available():\n"
    "    print('no CUDA GPU is visible'); sys.exit(4)\n"
    "print(getattr(cudnn, '__version__', '?'), v, torch.__version__)\n"
)


class SideError(ValueError):
    """A side that cannot be used; the message names it."""


def parse(spec: str, wheels: dict) -> Side:
    """A Side from its spec (module docstring); `wheels`: {version: wheel path} from --wheels."""
    spec = spec.strip()
    side = Side(label="", spec=spec)
    if spec in ("", "current"):
        side.label = "current"
        return side
    labels = []
    for part in spec.split(","):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or not value:
            raise SideError(f"side {spec!r}: {part!r} is not KEY=VALUE (fe=, cudnn=, path=, env.NAME=, name=)")
        if key == "name":
            side.label = value
            continue
        part_of = PARTS.get("env" if key.startswith("env.") and len(key) > 4 else key) if key != "env" else None
        if part_of is None:
            raise SideError(f"side {spec!r}: unknown part {key!r} (fe=, cudnn=, path=, env.NAME=, name=)")
        labels.append(part_of(side, key, value, wheels))
    side.label = side.label or "+".join(labels)
    return side


def _fe(side: Side, key: str, value: str, wheels: dict) -> str:
    wheel = Path(value) if value.endswith(".whl") else wheels.get(value)
    if wheel is None:
        raise SideError(f"side {side.spec!r}: no nvidia_cudnn_frontend-{value}-*.whl in --wheels "
                        f"({', '.join(wheels) or 'none found'})")
    if not wheel.is_file():
        raise SideError(f"side {side.spec!r}: {wheel}: no such wheel")
    side.wheel = str(wheel.resolve())
    return f"fe{value if not value.endswith('.whl') else wheel.name.split('-')[1]}"


def _cudnn(side: Side, key: str, value: str, wheels: dict) -> str:
    folder = Path(value).expanduser()
    if not folder.is_dir() or not any(folder.glob("libcudnn*.so*")):
        raise SideError(f"side {side.spec!r}: {folder}: not a folder holding libcudnn*.so")
    side.ld_library_path.append(str(folder.resolve()))
    return f"cudnn:{folder.name}"


def _path(side: Side, key: str, value: str, wheels: dict) -> str:
    where = Path(value).expanduser()
    if not where.exists():
        raise SideError(f"side {side.spec!r}: {where}: no such file or folder")
    side.pythonpath.append(str(where.resolve()))
    side.cudnn_only = False
    return f"path:{where.name}"


def _env(side: Side, key: str, value: str, wheels: dict) -> str:
    side.env[key[4:]] = value
    side.cudnn_only = False
    return f"{key[4:]}={value}"


PARTS = {"fe": _fe, "cudnn": _cudnn, "path": _path, "env": _env}   # a spec's parts: how each sets up its side


def unique_labels(sides: list[Side]) -> None:
    """Two sides of one label (an A/A job) become LABEL-A and LABEL-B."""
    seen: dict = {}
    for s in sides:
        seen.setdefault(s.label, []).append(s)
    for label, group in seen.items():
        if len(group) > 1:
            for i, s in enumerate(group):
                s.label = f"{label}-{chr(ord('A') + i)}"


def install(side: Side, python: str = sys.executable) -> None:
    """Installs the side's wheel into a folder of its own in the user's cache (kept between jobs:
    one per wheel file; $HOSTBENCH_FE_CACHE moves it)."""
    if not side.wheel:
        return
    from cudnn_hostbench.scripts.matrix_part import install as pip_install
    target = fe_cache() / Path(side.wheel).stem
    marker = target / ".installed"
    if not marker.exists():
        ok, log = pip_install(python, Path(side.wheel), target)
        if not ok:
            raise SideError(f"side {side.label}: {side.wheel}: pip could not install it: "
                            f"{log.strip().splitlines()[-1] if log.strip() else 'no output'}")
        marker.write_text(side.wheel, encoding="utf-8")
    side.pythonpath = [str(target), *[p for p in side.pythonpath if p != str(target)]]


def fe_cache() -> Path:
    """Where installed frontend wheels are kept: $HOSTBENCH_FE_CACHE, else the user cache folder."""
    if os.environ.get("HOSTBENCH_FE_CACHE"):
        return Path(os.environ["HOSTBENCH_FE_CACHE"])
    try:
        from platformdirs import user_cache_dir
        return Path(user_cache_dir("cudnn-hostbench")) / "fe"
    except ImportError:
        return Path(tempfile.gettempdir()) / "hostbench-fe"


def check(side: Side, python: str = sys.executable, timeout: float = 120) -> dict:
    """Imports the frontend in the side's environment: {frontend, cudnn, torch}; SideError otherwise."""
    env = side.environ(dict(os.environ))
    try:
        p = subprocess.run([python, "-c", CHECK], env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SideError(f"side {side.label}: importing the frontend took over {timeout:.0f} s") from None
    lines = (p.stdout or "").strip().splitlines()
    if p.returncode != 0:
        why = lines[-1] if lines else ((p.stderr or "").strip().splitlines() or [f"exit {p.returncode}"])[-1]
        raise SideError(f"side {side.label}: {why}")
    fe, cudnn, torch = (lines[-1].split() + ["?", "?", "?"])[:3]
    return {"frontend": fe, "cudnn": cudnn, "torch": torch}
