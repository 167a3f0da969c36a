"""Kernel signatures on CPU: the family map, the mismatch text, and every probe's declarations
against the kernels the committed H200 reference run actually recorded."""
import importlib
import json
import pkgutil
import re
from collections import Counter
from pathlib import Path

import pytest

from cudnn_hostbench import probes
from cudnn_hostbench.bench.measure.core import kernels
from cudnn_hostbench.bench.measure.core.timing import summarize_device_events
from cudnn_hostbench.bench.measure.probe import Variant

REF = Path(__file__).resolve().parents[1] / "reports" / "reference" / "h200" / "run.json"


@pytest.mark.parametrize("name,fam", [
    ("nvjet_sm90_tst_64x8_64x16_1x2_h_bz_NNT", "gemm"),
    ("cudnn_generated_fort_native_sm90_matMul_knob_47_128x64x64_8_0", "gemm"),
    ("cudnn_generated_fort_native_sm90_matMul_pointwise_pointwise_pointwise_reduction_knob_49_128x64x64_8_0", "gemm"),
    ("cublasLt::splitKreduce_kernel", "reduce"),
    ("at::native::reduce_kernel", "reduce"),
    ("at::native::elementwise_kernel [copy]", "copy"),
    ("at::native::vectorized_elementwise_kernel", "pointwise"),
    ("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64", "conv"),
    ("cutlass__5x_cudnn::Kernel", "conv"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7", "sdpa"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>", "norm"),
    ("some_unknown_kernel", "other"),
])
def test_family_of(name, fam):
    assert kernels.family_of(name) == fam


def test_mismatch_says_what_ran_and_what_was_expected():
    assert kernels.mismatch(kernels.GEMM, {"gemm": 1.0}) is None
    assert kernels.mismatch(kernels.GEMM, {"gemm": 1.0, "reduce": 1.0}) is None   # split-K
    msg = kernels.mismatch((("conv", 1),), {"conv": 1.0, "pointwise": 2.0})
    assert msg == "kernel signature: ran 3 kernel(s)/call (2 pointwise, 1 conv), expected 1 conv"
    assert kernels.mismatch((("any", 1),), {"other": 1.0}) is None
    assert "ran 0 kernel(s)" in kernels.mismatch((("gemm", 1),), {})
    assert kernels.mismatch((), {"gemm": 5.0}) is None                              # not declared


def test_device_sample_counts_families_from_full_names_and_skips_memsets():
    ev = [("void at::native::elementwise_kernel<128, 2, at::native::direct_copy_kernel_cuda(...)>", 1.0),
          ("nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT", 2.0), ("Memset (Device)", 0.1)] * 4
    s = summarize_device_events(ev, calls=4)
    assert s.families == {"copy": 1.0, "gemm": 1.0}
    assert kernels.mismatch((("copy", 1), *kernels.GEMM), s.families) is None


@pytest.mark.parametrize("bad", [(("gemm",),), (("matmul", 1),), (("gemm", -1),), (("gemm", (2, 1)),),
                                 (("gemm", 1), ("gemm", 1)), [("gemm", 1)], (("gemm", True),)])
def test_bad_declarations_are_refused(bad):
    with pytest.raises(ValueError):
        Variant("x", "info", "x", kernels=bad)


def _probes():
    out = {}
    for m in pkgutil.iter_modules(probes.__path__):
        if m.name.startswith("probe_"):
            p = importlib.import_module(f"cudnn_hostbench.probes.{m.name}").PROBE
            out[p.name] = p
    return out


def test_every_device_variant_declares_its_kernels_or_says_why_not():
    for p in _probes().values():
        why_not = p.extra.get("kernels_not_declared", {})
        for v in p.variants:
            if "device" in v.modes:
                assert v.kernels or why_not.get(v.name), f"{p.name}/{v.name} declares no kernels and no reason"
            else:
                assert not v.kernels, f"{p.name}/{v.name}: no device mode, so a declaration is never checked"


def _names(rec) -> Counter:
    c = Counter()
    for item in rec.get("kernel_names") or []:
        m = re.match(r"(.*) x([0-9.e+-]+)$", item)
        c[m.group(1)] += float(m.group(2))
    return c


def test_declarations_fit_the_kernels_the_reference_run_recorded():
    """The H200 reference run's device records hold kernel names per call: each must fit its
    variant's declaration, or the lead's next run would mark good figures as mismatches."""
    doc = json.loads(REF.read_text())
    by = _probes()
    checked = 0
    for b in doc["benchmarks"]:
        e = b.get("extra_info") or {}
        if e.get("mode") != "device" or e.get("status") != "ok" or e.get("probe") not in by:
            continue
        p = by[e["probe"]]
        names = [v.name for v in p.variants]
        if e["variant"] not in names:
            continue
        fams = kernels.families(_names(e), 1)
        msg = kernels.mismatch(p.variant(e["variant"]).kernels, fams)
        assert msg is None, f"{e['probe']}/{e['variant']} {e['size']}: {msg}"
        checked += 1
    assert checked >= 60
