"""cudnn-hostbench: one installed package, so nothing generic lands in site-packages.

Installed (`pip install .`), its subpackages bench, probes, reports and scripts sit inside this
folder. In a checkout they stay top-level folders of the repository (the project's layout), and
this package reaches them through its __path__: `cudnn_hostbench.bench` is <repo>/bench.
"""
from pathlib import Path as _Path

__version__ = "0.2.0"

_here = _Path(__file__).resolve().parent
if not (_here / "bench").is_dir() and (_here.parent / "bench" / "__init__.py").is_file():
    __path__.append(str(_here.parent))
