"""Cache keys on CPU: the in-process tuple key (GraphCache) and the stable problem keys for files."""
import pytest

torch = pytest.importorskip("torch")

from cudnn_hostbench.bench.cudnn_graphs.cache_keys import (
    GraphCache,
    dtype_tag,
    layout_tag,
    operands_key,
    problem_key,
    row_major,
)


def test_tuple_key_separates_shape_stride_and_dtype():
    a = torch.empty(1, 64, 32, dtype=torch.bfloat16)
    w = torch.empty(48, 32, dtype=torch.bfloat16)
    view = w.t().unsqueeze(0)                    # [1, 32, 48], strides (.., 1, 32)
    contig = view.contiguous()                   # same shape, row-major
    assert GraphCache.key(a, view) != GraphCache.key(a, contig)
    assert GraphCache.key(a, contig) != GraphCache.key(a.to(torch.float16), contig)
    assert GraphCache.key(a, contig) != GraphCache.key(torch.empty(1, 65, 32, dtype=torch.bfloat16), contig)
    # equal descriptions, different buffers: the same key (a key never holds pointers)
    assert GraphCache.key(a, contig) == GraphCache.key(a.clone(), contig.clone())
    assert GraphCache.key(a, extra=("relu",)) != GraphCache.key(a, extra=("gelu",))
    hash(GraphCache.key(a, view))


def test_graph_cache_counts_hits_and_builds_once():
    c = GraphCache()
    built = []
    a = torch.empty(2, 3)
    for _ in range(3):
        g = c.get(GraphCache.key(a), lambda: built.append(1) or "graph")
    assert g == "graph" and built == [1] and (c.hits, c.misses, len(c)) == (2, 1, 1)


def test_layout_tags():
    assert row_major((2, 3, 4)) == (12, 4, 1)
    assert layout_tag((2, 3, 4), (12, 4, 1)) == "rm"
    x = torch.empty(8, 16, 5, 5).to(memory_format=torch.channels_last)
    assert layout_tag(x.shape, x.stride()) == "cl"
    w = torch.empty(48, 32)
    assert layout_tag(w.t().shape, w.t().stride()) == "s1x32"
    with pytest.raises(ValueError):
        layout_tag((2, 3), (3,))


def test_dtype_tags():
    assert dtype_tag(torch.bfloat16) == "bf16" and dtype_tag("torch.float32") == "f32"
    assert dtype_tag("torch.float8_e4m3fn") == "float8_e4m3fn"


def test_problem_key_is_stable_and_discriminating():
    a = torch.empty(1, 256, 256, dtype=torch.bfloat16)
    b = torch.empty(1, 256, 256, dtype=torch.bfloat16)
    k = problem_key("matmul", a, b)
    assert k == "matmul|1x256x256:rm:bf16,1x256x256:rm:bf16"
    assert problem_key("matmul", a, b.transpose(1, 2)) != k
    assert problem_key("matmul", a, b, act="relu") != problem_key("matmul", a, b, act="gelu")
    assert problem_key("conv", a, pad=(1, 1), stride=[1, 1]) == problem_key("conv", a, stride=(1, 1), pad=[1, 1])
    assert operands_key(a) == "1x256x256:rm:bf16"
    # the heuristic modes are part of a plan-index key: indices belong to the list those modes made
    assert problem_key("matmul", a, b, modes="A+B+FALLBACK") != problem_key("matmul", a, b, modes="A+FALLBACK")
    for bad in ("", "a|b"):
        with pytest.raises(ValueError):
            problem_key(bad, a)
    with pytest.raises(ValueError):
        problem_key("matmul", a, note="has space")
