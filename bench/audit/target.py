"""The user's step: `path/to/file.py:make_step` loaded, called, and first run; and what this
machine lacks for an audit."""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path

NEEDS = "needs a CUDA GPU and nvidia-cudnn-frontend (pip install nvidia-cudnn-frontend)"


class AuditInputError(ValueError):
    """Bad input from the user: the message says what and where."""


def parse_target(spec: str) -> tuple[str, str, Path | None]:
    """`path/to/file.py:make_step` -> (where, attribute, path or None for a module name); checks
    the form and that the file exists, imports nothing."""
    where, sep, attr = spec.rpartition(":")
    if not sep or not where or not attr:
        raise AuditInputError(f"{spec!r}: expected path/to/file.py:factory (a file, a colon, a function name)")
    if where.endswith(".py") or os.sep in where:
        path = Path(where)
        if not path.is_file():
            raise AuditInputError(f"{spec}: no such file {where}")
        return where, attr, path
    return where, attr, None


def _load_file(path: Path):
    """The module of a user's file, run once per process: also under its own name (its stem), so a
    neighbour that imports it (a fixed step importing the trap's weights, `--fixed`) gets this
    module instead of running the file a second time (a torch.library namespace defined twice fails)."""
    stem, real = path.stem, path.resolve()
    known = sys.modules.get(stem)
    if known is not None and getattr(known, "__file__", None) and Path(known.__file__).resolve() == real:
        return known
    name = "hostbench_audit_target_" + "".join(c if c.isalnum() else "_" for c in stem)
    mod_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(mod_spec)
    alias = stem.isidentifier() and stem not in sys.modules
    if alias:
        sys.modules[stem] = module
    try:
        mod_spec.loader.exec_module(module)
    except BaseException:
        if alias:
            sys.modules.pop(stem, None)
        raise
    return module


def load_factory(spec: str):
    """`path/to/file.py:make_step` (or `package.module:make_step`) -> the factory callable."""
    where, attr, path = parse_target(spec)
    if path is not None:
        sys.path.insert(0, str(path.resolve().parent))  # the user's file may import its neighbours
        try:
            module = _load_file(path)
        except SyntaxError as e:
            raise AuditInputError(f"{spec}: cannot import {where}: SyntaxError at line {e.lineno}: {e.msg}") from e
        except Exception as e:
            raise AuditInputError(f"{spec}: importing {where} raised {type(e).__name__}: {e}") from e
    else:
        try:
            module = importlib.import_module(where)
        except Exception as e:
            raise AuditInputError(f"{spec}: cannot import module {where}: {type(e).__name__}: {e}") from e
    if not hasattr(module, attr):
        raise AuditInputError(f"{spec}: {where} has no attribute {attr!r}")
    factory = getattr(module, attr)
    if not callable(factory):
        raise AuditInputError(f"{spec}: {attr} is a {type(factory).__name__}, not a factory function")
    return factory


def make_step(factory, name: str = "make_step"):
    """Calls the factory; its result must be a zero-argument callable."""
    try:
        step = factory()
    except Exception as e:
        raise AuditInputError(f"{name}() raised {type(e).__name__}: {e}") from e
    if not callable(step):
        raise AuditInputError(f"{name}() returned a {type(step).__name__}, not a zero-argument callable")
    return step


def first_call(step) -> None:
    try:
        step()
    except Exception as e:
        raise AuditInputError(f"the step raised on its first call: {type(e).__name__}: {e}") from e


def environment_problem() -> str | None:
    """What this machine lacks for an audit (torch with a CUDA GPU, the cuDNN frontend), or None.
    torch comes first, with CUDA up, so `import cudnn` finds torch's libcudnn."""
    problems = []
    try:
        import torch
    except ImportError as e:
        return str(e)
    if not torch.cuda.is_available():
        problems.append(f"no CUDA GPU (torch {torch.__version__} is a CPU build)" if torch.version.cuda is None
                        else "no CUDA GPU visible to torch")
    else:
        with contextlib.suppress(Exception):
            torch.cuda.init()
    try:
        import cudnn  # noqa: F401
    except (ImportError, OSError) as e:
        problems.append(str(e))
    return "; ".join(problems) or None
