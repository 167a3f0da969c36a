"""Kernel cache for dynamic shapes: four conv-bias-ReLU graphs (C=128, H=W=56, K=256, 3x3,
channels_last, bf16) that differ only in batch (8, 16, 24, 32), built in that order with the five
steps, each on a fresh graph: without a kernel cache (static shapes) and sharing one
`cudnn.create_kernel_cache()` (dynamic shapes). Host ms per build, repeat by repeat with a fresh
cache each repeat; every built graph's result is checked against torch once. Whether later builds
hit the cache is stated from the timings: a hit is a later build under half the first cached
build (which compiles the dynamic-shape kernel); each is also set against the static-shape build
of the same batch, which needs no cache because its engine is precompiled."""
import re
import time

from cudnn_hostbench.bench.cudnn_graphs.build import Built, as_unsupported
from cudnn_hostbench.bench.cudnn_graphs.context import prepare
from cudnn_hostbench.bench.cudnn_graphs.host import fmt_ms, host_record, median, safe_measure, stats_ratio, time_ms
from cudnn_hostbench.bench.cudnn_graphs.problems import ConvProblem, ConvShape, require_conv
from cudnn_hostbench.bench.measure.probe import Probe, Variant
from cudnn_hostbench.bench.measure.runfile.status import OK, Status, Unsupported, failed

BATCHES = (8, 16, 24, 32)
BASE = "c128hw56k256"
TIME_BOX_S = 45.0


def _label(n: int, size: str) -> str:
    """The row label for batch n, from any row's label (they differ only in the leading n<batch>)."""
    return f"n{n}" + re.sub(r"^n\d+", "", size)


def _sizes(options):
    return [f"n{n}{BASE}" for n in BATCHES]


def build(ctx, size):
    return {}      # build-time probe: everything happens in measure()


def _check_built(problem: ConvProblem, built: Built) -> float:
    torch = problem.ctx.torch
    fn = built.call(problem.buffers())
    with torch.cuda.stream(problem.ctx.stream):
        problem.poison()
        fn()
    problem.ctx.sync()
    return problem.check(problem.y)


def _run_all(ctx, size):
    cudnn, caps = ctx.cudnn, ctx.caps
    if not caps.kernel_cache:
        raise Unsupported("needs cudnn.create_kernel_cache (frontend >= 1.8)")
    if caps.backend < 90400:
        raise Unsupported(f"needs cuDNN backend >= 9.4 for a kernel cache (dynamic shapes); have {caps.backend}")
    require_conv(ctx)
    base = ConvShape.parse(size)
    first = ConvProblem(ctx, base.with_batch(BATCHES[0]))
    probs = {BATCHES[0]: first}
    for n in BATCHES[1:]:
        probs[n] = ConvProblem(ctx, base.with_batch(n), weight=first.wt, bias=first.b)
    # warm-up outside the timed builds: a batch no row uses, so one-time library/NVRTC start-up
    # costs do not land on whichever row runs first
    warm = ConvProblem(ctx, base.with_batch(2), weight=first.wt, bias=first.b)
    try:
        warm.build()
    except Exception:  # noqa: BLE001 - the rows report their own failures
        pass
    reps = 4 if ctx.options.heavy else 2
    ms = {("no_cache", n): [] for n in BATCHES} | {("shared_cache", n): [] for n in BATCHES}
    status = {k: OK for k in ms}
    dyn = {"dynamic": caps.dyn_kw}

    def one(variant, kc, r):
        for n in BATCHES:
            if not status[(variant, n)].ok:
                continue
            p = probs[n]
            try:
                b, t = time_ms(lambda: p.build(kernel_cache=kc, **(dyn if kc is not None else {})))  # noqa: B023 - called at once
            except Exception as e:  # noqa: BLE001
                status[(variant, n)] = Status.of(as_unsupported(e))
                continue
            ms[(variant, n)].append(t)
            if r == 0:
                err = _check_built(p, b)
                if not err <= 2e-2:
                    status[(variant, n)] = failed(f"numerics rel_err={err:.3g} of the built graph vs torch")
            del b

    t0 = time.perf_counter()
    done = 0
    for r in range(reps):       # alternate which variant builds first, so neither always goes cold
        if r and not ctx.options.heavy and time.perf_counter() - t0 > TIME_BOX_S:
            break               # builds this slow: one repeat says enough inside the suite's budget
        order = ("no_cache", "shared_cache") if r % 2 == 0 else ("shared_cache", "no_cache")
        for variant in order:
            one(variant, cudnn.create_kernel_cache() if variant == "shared_cache" else None, r)
        done += 1
    return ms, status, done


def _notes(ms, status) -> dict:
    med = {k: median(v) for k, v in ms.items()}
    first = med[("shared_cache", BATCHES[0])]
    notes, hits = {}, []
    for n in BATCHES:
        nc, sc = med[("no_cache", n)], med[("shared_cache", n)]
        notes[("no_cache", n)] = f"static shapes, no cache: {fmt_ms(nc)} median"
        if not (status[("shared_cache", n)].ok and status[("shared_cache", BATCHES[0])].ok
                and status[("no_cache", n)].ok):
            continue
        if n == BATCHES[0]:
            notes[("shared_cache", n)] = f"first build into a fresh cache: {fmt_ms(sc)} (compiles)"
            continue
        hit = sc < 0.5 * first
        hits.append(hit)
        notes[("shared_cache", n)] = (f"{fmt_ms(sc)} = x{sc / first:.2f} of the first cached build: "
                                      + ("cache hit, no recompilation (from timings)" if hit else "no sign of a cache hit")
                                      + f"; x{sc / nc:.2f} of the static-shape build without a cache")
    if all(status[(v, n)].ok for n in BATCHES for v in ("shared_cache", "no_cache")):
        verdict = ("later builds hit the cache" if hits and all(hits) else
                   "later builds did NOT all hit the cache" if hits else "")
        notes[("shared_cache", BATCHES[0])] += f"; verdict: {verdict}"
    return notes


def measure(ctx, size, opt):
    def run():
        try:
            return _run_all(ctx, size)
        except Exception as e:  # noqa: BLE001 - remembered: the other batch rows report it too
            return e
    done = ctx.attached(PROBE.name, run)    # one run serves every batch row
    if isinstance(done, Exception):
        raise done
    ms, status, reps = done
    notes = _notes(ms, status)
    recs = []
    for n in BATCHES:
        s = _label(n, size)
        for variant in ("no_cache", "shared_cache"):
            k = (variant, n)
            ratio = stats_ratio(ms[k], ms[("no_cache", n)]) if variant == "shared_cache" else None
            recs.append(host_record(PROBE, s, variant, ms[k] if status[k].ok else [], status=status[k],
                                           note=notes.get(k, ""), ratio=ratio,
                                           baseline="no_cache" if ratio else ""))
    return recs


PROBE = Probe(
    name="kernel_cache",
    doc=__doc__,
    variants=[
        Variant("no_cache", "baseline", "static graph, no kernel cache", modes=("host",)),
        Variant("shared_cache", "fixed", "dynamic shapes, one shared kernel cache", modes=("host",)),
    ],
    build=build,
    sizes=_sizes,
    baseline="no_cache",
    prepare=prepare,
    extra={"measure": safe_measure(lambda: PROBE, measure)},
)


def test_kernel_cache(hb_run):
    hb_run()
