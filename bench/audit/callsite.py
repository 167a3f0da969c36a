"""What a line of user code was doing when a sample caught it: the call (or operator) at the
frame's current instruction, named from the source, and what kind of callee that is.

The instruction comes from the frame (`f_lasti`); its source text from the instruction's column
positions (Python 3.11+), else by matching it to the statement's calls in evaluation order
(`ast`, any version). The kind comes from the object the name resolves to in the frame's globals
when it is a plain dotted name (`torch.mm`, `cudnn_linear`), else from the attribute's name."""
from __future__ import annotations

import ast
import builtins
import dis
import linecache
from functools import lru_cache

TORCH, CUDNN, DISPATCHER, OPERATOR, PYTHON, CALL = ("torch op", "cuDNN frontend", "dispatcher", "operator",
                                                    "Python", "call")
KINDS = (TORCH, CUDNN, DISPATCHER, OPERATOR, PYTHON, CALL)

# cudnn.pygraph methods and cudnn functions user code calls per step, when cudnn cannot be imported
CUDNN_NAMES = frozenset({
    "execute", "execute_plan_at_index", "set_stream", "build", "validate", "build_operation_graph",
    "create_execution_plans", "check_support", "build_plans", "build_plan_at_index", "deserialize", "serialize",
    "get_workspace_size", "get_workspace_size_plan_at_index", "pygraph", "create_handle", "tensor",
    "set_uid", "set_output", "set_data_type", "set_dim", "set_stride", "get_execution_plan_count",
})
OPERATORS = {"BINARY_SUBSCR": "[]", "STORE_SUBSCR": "[]=", "COMPARE_OP": None, "BINARY_OP": None,
             "CONTAINS_OP": "in", "IS_OP": "is", "UNARY_NEGATIVE": "-", "UNARY_INVERT": "~"}


def _is_call(opname: str) -> bool:
    return opname.startswith("CALL") and not opname.startswith("CALL_INTRINSIC")


@lru_cache(maxsize=2048)
def _instructions(code) -> dict:
    return {i.offset: i for i in dis.get_instructions(code)}


def _instruction(code, lasti: int):
    ins = _instructions(code)
    before = [o for o in ins if o <= lasti]
    if not before:
        return None
    i = ins[max(before)]
    if i.opname == "PRECALL":    # 3.11 runs a specialised builtin call in PRECALL: name its CALL
        later = sorted(o for o in ins if o > i.offset)
        nxt = next((ins[o] for o in later if _is_call(ins[o].opname)), None)
        return nxt or i
    return i


def _text_at(code, ins) -> str | None:
    """Source text of an instruction from its positions (3.11+)."""
    pos = getattr(ins, "positions", None)
    if pos is None or pos.lineno is None or pos.col_offset is None or pos.end_col_offset is None:
        return None
    lines = [linecache.getline(code.co_filename, n) for n in range(pos.lineno, (pos.end_lineno or pos.lineno) + 1)]
    if not any(lines):
        return None
    if len(lines) == 1:
        return lines[0].encode()[pos.col_offset:pos.end_col_offset].decode(errors="replace")
    lines[0] = lines[0].encode()[pos.col_offset:].decode(errors="replace")
    lines[-1] = lines[-1].encode()[:pos.end_col_offset].decode(errors="replace")
    return " ".join(x.strip() for x in lines)


def callee_of(call_text: str) -> str:
    """'self.graph.execute(pack, ws)' -> 'self.graph.execute': the text before the parenthesis
    that matches the closing one."""
    t = call_text.strip()
    if not t.endswith(")"):
        return t
    depth = 0
    for i in range(len(t) - 1, -1, -1):
        if t[i] == ")":
            depth += 1
        elif t[i] == "(":
            depth -= 1
            if depth == 0:
                return t[:i].strip()
    return t


# -- the fallback: the k-th call instruction of a statement is its k-th call in evaluation order --

def _eval_order(node) -> list:
    """Call nodes of a statement in the order the interpreter runs them (post-order; an
    assignment's value before its targets); lambdas and comprehensions are code of their own."""
    out = []

    def visit(n):
        if isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                          ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return
        if isinstance(n, (ast.Assign, ast.AnnAssign)):
            if n.value is not None:
                visit(n.value)
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                visit(t)
            return
        for child in ast.iter_child_nodes(n):
            visit(child)
        if isinstance(n, ast.Call):
            out.append(n)
    visit(node)
    return out


@lru_cache(maxsize=256)
def _statements(filename: str) -> tuple:
    src = "".join(linecache.getlines(filename))
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return ()
    simple = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise, ast.Assert)
    return tuple((n.lineno, n.end_lineno or n.lineno, n) for n in ast.walk(tree)
                 if isinstance(n, simple) or isinstance(n, (ast.If, ast.While)))


def _line(ins) -> int | None:
    """The line an instruction starts (3.10-3.12: starts_line; 3.13+: line_number)."""
    n = getattr(ins, "line_number", None)
    if n is not None:
        return n
    s = ins.starts_line
    return s if isinstance(s, int) and not isinstance(s, bool) else None


def call_text_by_order(code, lasti: int, lineno: int, instructions=None) -> str | None:
    """The source of the call at `lasti`, found by counting call instructions of its statement."""
    stmts = [(a, b, n) for a, b, n in _statements(code.co_filename) if a <= lineno <= b]
    if not stmts:
        return None
    a, b, node = min(stmts, key=lambda s: s[1] - s[0])   # the innermost statement
    if isinstance(node, (ast.If, ast.While)):
        node, b = node.test, node.test.end_lineno or node.test.lineno
    calls = _eval_order(node)
    ins = instructions if instructions is not None else list(dis.get_instructions(code))
    k, line = -1, None
    for i in ins:
        line = _line(i) or line
        if i.offset > lasti:
            break
        if line is not None and a <= line <= b and _is_call(i.opname):
            k += 1
    if 0 <= k < len(calls):
        return ast.get_source_segment("".join(linecache.getlines(code.co_filename)), calls[k])
    return None


# -- kinds ---------------------------------------------------------------------------------------

def _resolve(name: str, globals_):
    """The object a plain dotted name refers to in these globals, else None (no calls made)."""
    parts = name.split(".")
    if not parts or not all(p.isidentifier() for p in parts) or globals_ is None:
        return None
    obj = globals_.get(parts[0], getattr(builtins, parts[0], None))
    for p in parts[1:]:
        if obj is None:
            return None
        try:
            obj = getattr(obj, p)
        except Exception:  # noqa: BLE001 - a lookup that fails names nothing
            return None
    return obj


def kind_of_object(obj) -> str | None:
    if obj is None:
        return None
    t = type(obj)
    mod = getattr(obj, "__module__", None) or getattr(t, "__module__", "") or ""
    if t.__name__ in ("OpOverload", "OpOverloadPacket", "CustomOpDef") or mod.startswith(("torch._ops", "torch._library")):
        return DISPATCHER
    if mod.startswith("torch") or t.__module__.startswith("torch"):
        return TORCH
    if mod.startswith("cudnn") or t.__module__.startswith("cudnn"):
        return CUDNN
    if mod == "builtins" or t.__module__ == "builtins" and t.__name__ == "builtin_function_or_method":
        return PYTHON
    return None


@lru_cache(maxsize=1)
def _tensor_attrs() -> frozenset:
    try:
        import torch
        return frozenset(dir(torch.Tensor))
    except ImportError:
        return frozenset()


@lru_cache(maxsize=1)
def _cudnn_attrs() -> frozenset:
    try:
        import cudnn
        return frozenset(dir(cudnn.pygraph)) | frozenset(dir(cudnn)) | CUDNN_NAMES
    except (ImportError, OSError, AttributeError):
        return CUDNN_NAMES


def _kind_of_type(callee_type) -> str | None:
    mod = getattr(callee_type, "__module__", "") or ""
    if mod.startswith("torch") and not mod.startswith(("torch._ops", "torch._library")):
        return TORCH
    if mod.startswith("cudnn"):
        return CUDNN
    return None


def kind_of_name(name: str, globals_=None, local_types: dict | None = None) -> str:
    try:
        found = kind_of_object(_resolve(name, globals_))
    except Exception:  # noqa: BLE001 - an object that will not say what it is
        found = None
    if found:
        return found
    head, _, attr = name.rpartition(".")
    if local_types and head in local_types:      # `g.matmul`: what g is decides (cuDNN graph or tensor)
        found = _kind_of_type(local_types[head])
        if found:
            return found
    if head.startswith("torch"):
        return TORCH
    if head.startswith("cudnn"):
        return CUDNN
    if attr:
        in_cudnn, in_torch = attr in _cudnn_attrs(), attr in _tensor_attrs()
        if in_cudnn and not in_torch:
            return CUDNN
        if in_torch:
            return TORCH
    elif hasattr(builtins, name):
        return PYTHON
    return CALL


def decode(code, lasti: int, lineno: int, globals_=None, local_types: dict | None = None) -> tuple[str, str]:
    """(what the line was doing, its kind) at instruction offset `lasti` of `code`."""
    try:
        ins = _instruction(code, lasti)
    except Exception:  # noqa: BLE001 - code dis cannot read
        ins = None
    if ins is None:
        return "Python", PYTHON
    if _is_call(ins.opname):
        text = _text_at(code, ins) or call_text_by_order(code, ins.offset, lineno)
        if not text:
            return "a call", CALL
        name = " ".join(callee_of(text).split())
        if ")" in name:                      # a chain: name the last call, `….item`
            name = "…" + name[name.rfind(")") + 1:]
        if len(name) > 60:
            name = name[:57] + "..."
        return f"{name}()", kind_of_name(name, globals_, local_types)
    if ins.opname in OPERATORS or ins.opname.startswith("BINARY_") or ins.opname.startswith("INPLACE_"):
        sym = OPERATORS.get(ins.opname) or ins.argrepr or ins.opname.split("_", 1)[-1].lower()
        return f"operator {sym}", OPERATOR
    return "Python", PYTHON


# instructions after which the interpreter takes a pending signal (3.10-3.12)
_CHECKPOINTS = ("RESUME", "JUMP_BACKWARD", "JUMP_ABSOLUTE", "YIELD_VALUE")


def operators_before(code, lasti: int) -> tuple:
    """(line, operator) of the operators run since the last place a signal could be taken
    before `lasti` in this code: a sample landing at `lasti` may carry their time."""
    try:
        ins = sorted(_instructions(code).values(), key=lambda i: i.offset)
    except Exception:  # noqa: BLE001
        return ()
    out, line = [], None
    for i in ins:
        line = _line(i) or line
        if i.offset >= lasti:
            break
        if _is_call(i.opname) or i.opname in _CHECKPOINTS:
            out = []
        elif i.opname in OPERATORS or i.opname.startswith(("BINARY_", "INPLACE_")):
            sym = OPERATORS.get(i.opname) or i.argrepr or i.opname.split("_", 1)[-1].lower()
            out.append((line, sym))
    return tuple(dict.fromkeys(out))
