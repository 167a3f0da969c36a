"""The dashboard's figures, drawn with seaborn and inlined as SVG (no scripts, nothing fetched):
trends faceted by row with the history band, every variant's round ratios per probe, and the
version view as a heatmap. Each function takes plain data (page.py gathers it) and returns the SVG
text, or "" when there is nothing to draw.
"""
from __future__ import annotations

import io
import re

COLOURS = {"eager": "#4c72b0", "graph": "#dd8452", "device": "#55a868", "host": "#8172b3"}
VERDICT_COLOURS = {"SLOWER": "#b91c1c", "FASTER": "#1a7f37", "KERNEL CHANGED": "#a16207"}
FACET_W, FACET_H = 3.3, 2.0   # inches (96 px each at full size): four panels across a 1400 px page, two at 800


def _panels(svgs: list[str]) -> str:
    """Panels as separate figures that wrap with the page (the template's `.panels`): four across
    a wide page, two at 800 px, each at its own size so its text stays readable."""
    return "".join(f'<div class="panel">{x}</div>' for x in svgs)


def _panel(width: float, height: float, left: float = 0.6, bottom: float = 0.38, top: float = 0.3):
    """One panel's figure: fixed margins in inches (tight_layout measures every label: slow)."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(width, height))
    fig.subplots_adjust(left=left / width, right=1 - 0.08 / width, top=1 - top / height, bottom=bottom / height)
    return fig, ax


def _setup():
    import matplotlib
    matplotlib.use("Agg")
    import seaborn as sns
    sns.set_theme(style="whitegrid", context="paper", font_scale=0.95)
    # text stays text (smaller, searchable); a fixed salt keeps a re-rendered page byte-identical
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "hostbench",
                                "font.family": "DejaVu Sans"})
    return sns


def _svg(fig, label: str, prefix: str) -> str:
    import matplotlib.pyplot as plt
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, dpi=110)
    plt.close(fig)
    text = _compact(buf.getvalue(), prefix)
    # scale to the page's width; the label names the figure for screen readers
    text = re.sub(r'<svg([^>]*?) width="([\d.]+)pt" height="([\d.]+)pt"',
                  lambda m: f'<svg{m.group(1)} class="figure" role="img" aria-label="{_attr(label)}" '
                            f'style="max-width:100%;height:auto" width="{float(m.group(2)) * 4 / 3:.0f}" '
                            f'height="{float(m.group(3)) * 4 / 3:.0f}"', text, count=1)
    return text


def _compact(svg: str, prefix: str) -> str:
    """matplotlib's SVG, smaller (the committed pages have a size budget): no metadata, no
    indentation, no group ids, no no-op rotations, coordinates to 0.01 pt. Text between tags is
    left alone."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r'\s*transform="rotate\(-?0 [\d.]+ [\d.]+\)"', "", svg)
    svg = re.sub(r">\s+<", "><", svg)
    svg = re.sub(r'<g id="[^"]*">', "<g>", svg)   # group ids name nothing a reference points to
    svg = svg.replace("font-family: 'DejaVu Sans'; ", "")   # the page's style sheet sets it once
    svg = re.sub(r"<[^>]+>", lambda m: re.sub(r"(\.\d\d)\d+", r"\1", re.sub(r"\s*\n\s*", " ", m.group(0))), svg)
    return _classes(svg, prefix)


def _classes(svg: str, prefix: str) -> str:
    """Style attributes used three times or more become classes of one style sheet inside the
    figure. A page's style sheets all apply to the whole page: the names carry the figure's kind
    (`prefix`) and a hash of its drawing, so two GPUs' trends never share a class name."""
    import hashlib
    from collections import Counter
    counts = Counter(re.findall(r' style="([^"]*)"', svg))
    tag = f"{prefix}{hashlib.sha1(svg.encode()).hexdigest()[:6]}-"
    names = {st: f"{tag}{i}" for i, (st, n) in enumerate(counts.most_common()) if n >= 3}
    if not names:
        return svg
    svg = re.sub(r' style="([^"]*)"', lambda m: f' class="{names[m.group(1)]}"' if m.group(1) in names else m.group(0), svg)
    sheet = "".join(f"svg .{c}{{{st}}}" for st, c in names.items())
    return re.sub(r"(<svg[^>]*>)", lambda m: m.group(1) + f"<style>{sheet}</style>", svg, count=1)


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def band_limits(loc: float, rel: float) -> tuple[float, float]:
    """The band a figure is held to: its location ± its minimum detectable change, on the log scale the
    verdict judges on (a change of +rel or its mirror 1/(1+rel) - 1): never below zero, as a time or
    a ratio cannot be (loc × (1 - rel) is, past an MDC of 100 %)."""
    return loc / (1 + rel), loc * (1 + rel)


def trends(facets: list[dict], ticks: list[str], version_marks: list[tuple[int, str]]) -> str:
    """One facet per row: each run's figure (dot) and worker range (bar) at its position among the
    runs shown (evenly spaced, dated ticks), the history band (location ± the verdict's detectable
    change, or the pairwise floor around the newest history run), and version changes as dashed
    lines. `facets`: {title, mode, unit, verdict, points: [(x, value, lo, hi, is_led)], band: (loc, rel) | None}."""
    if not facets:
        return ""
    sns = _setup()
    import pandas as pd
    from matplotlib import ticker
    n = len(ticks)
    step = max(1, (n + 2) // 3)
    out = []
    for k, f in enumerate(facets):
        fig, ax = _panel(FACET_W, FACET_H + (0.15 if k == 0 and version_marks else 0))
        colour = COLOURS.get(f["mode"], "#444")
        pts = pd.DataFrame(f["points"], columns=["x", "value", "lo", "hi", "led"])
        if f["band"]:
            lo, hi = band_limits(*f["band"])
            loc = f["band"][0]
            ax.axhspan(lo, hi, color="#9db4d8", alpha=0.35, lw=0, zorder=0)
            ax.axhline(loc, color="#6a7fa8", lw=0.8, ls=":", zorder=0)
        spread = pts[pts.hi > pts.lo]
        ax.vlines(spread.x, spread.lo, spread.hi, color=colour, alpha=0.45, lw=2.5, zorder=1)
        ax.set_ylabel(f"{f['mode']} · {f['unit']}", fontsize=7.5)
        ax.set_xlabel(" ")   # labels set first: seaborn would otherwise lay out every tick label to decide
        sns.scatterplot(data=pts, x="x", y="value", color=colour, s=22, ax=ax, legend=False, zorder=3)
        ax.yaxis.set_major_locator(ticker.MaxNLocator(4))
        led = pts[pts.led]
        ax.scatter(led.x, led.value, s=60, facecolor=colour, edgecolor="black", linewidth=1.2, zorder=4)
        for x, _label in version_marks:
            ax.axvline(x - 0.5, color="#c44", ls="--", lw=0.8, zorder=0)
        name = f["title"].rsplit(" · ", 1)[0]   # the mode is in the y label
        ax.set_title(name, fontsize=min(8.5, 8.5 * 38 / len(name)), loc="left",
                     color=VERDICT_COLOURS.get(f["verdict"], "#222"),
                     fontweight="bold" if f["verdict"] in VERDICT_COLOURS else "normal")
        ax.tick_params(labelsize=7.5)
        ax.set_xlim(-0.6, n - 0.4)
        ax.set_xticks(range(0, n, step))
        ax.set_xticklabels([ticks[i] for i in range(0, n, step)], fontsize=7)
        if k == 0:   # version changes named once, on the first panel
            for x, label in version_marks:
                ax.annotate(label, (x - 0.5, 1.0), xycoords=("data", "axes fraction"), xytext=(0, 9),
                            textcoords="offset points", fontsize=6.5, color="#b33", ha="right", va="bottom")
        out.append(_svg(fig, f"trend of {f['title']}", "t"))
    return _panels(out)


def rounds(data, caption: str) -> str:
    """Per probe, every variant's round ratios to the probe's baseline (a dot per round, the
    reported median as a black bar). `data`: DataFrame with probe, size, variant, mode, baseline,
    ratio, median."""
    if data is None or not len(data):
        return ""
    sns = _setup()
    probes = list(dict.fromkeys(data["probe"]))
    longest = max(map(len, data["variant"]))
    # room for the variant names left of each panel (7.5 pt text: about 0.065 inch a character)
    name_in = 0.065 * min(longest, 24) + 0.15
    import numpy as np
    saved = np.random.get_state()   # stripplot jitters with numpy's global generator: seeded, a page re-renders the same
    np.random.seed(0)
    out = []
    for p in probes:
        sub = data[data.probe == p]
        order = list(dict.fromkeys(sub["variant"]))
        fig, ax = _panel(FACET_W, 0.22 * len(order) + 0.8, left=name_in, bottom=0.32, top=0.28)
        ax.set_xlabel(" ")
        ax.set_ylabel(" ")
        sns.stripplot(data=sub, x="ratio", y="variant", order=order, color=COLOURS["eager"], size=2.2, alpha=0.5,
                      jitter=0.25, ax=ax, legend=False, rasterized=True)   # thousands of dots: one image, not elements
        med = sub.drop_duplicates("variant")
        ax.scatter(med["median"], [order.index(v) for v in med["variant"]], marker="|", s=140, color="black",
                   zorder=5, linewidth=1.5)
        ax.axvline(1.0, color="#888", lw=0.8, ls="--", zorder=0)
        _ratio_axis(ax, sub["ratio"])
        title = f"{p} · {sub['size'].iloc[0]} · × {sub['baseline'].iloc[0]}"
        ax.set_title(title, fontsize=min(8.5, 8.5 * 44 / len(title)), loc="left",
                     x=-name_in / FACET_W * 0.9)   # over the names too: the panel's whole width
        ax.set_xlabel("")
        ax.set_ylabel("")
        ax.tick_params(labelsize=7.5)
        out.append(_svg(fig, f"{caption}: {p}", "r"))
    np.random.set_state(saved)
    return _panels(out)


def _ratio_axis(ax, ratios) -> None:
    """Log scale only where the ratios span more than 4×; ticks read 0.9×, 1×, 10×."""
    from matplotlib import ticker
    lo, hi = min(ratios.min(), 1.0), max(ratios.max(), 1.0)
    if hi / lo > 4:
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0) if hi / lo < 50 else (1.0,),
                                                     numticks=6))
        ax.xaxis.set_minor_locator(ticker.NullLocator())
    else:
        ax.xaxis.set_major_locator(ticker.MaxNLocator(5))
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:g}×"))


def heatmap(names: list[str], versions: list[str], values, labels) -> str:
    """The version view: one row per (probe/variant/size/mode), one column per frontend version;
    colour = change against the newest version (diverging, ±30 % full scale), text = the figure;
    grey: a version that did not measure the row."""
    if not names:
        return ""
    sns = _setup()
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd
    df = pd.DataFrame(np.array(values, dtype=float) * 100, index=names, columns=[f"fe {v}" for v in versions])
    sns.set_style("white")
    # about 800 px wide for five versions: readable on a narrow screen without scaling down
    fig, ax = plt.subplots(figsize=(1.6 + 0.9 * len(versions) + 0.052 * max(map(len, names)),
                                    0.6 + 0.24 * len(names)))
    ax.set_facecolor("#eeeeee")   # a version that did not measure the row
    sns.heatmap(df, annot=np.array(labels, dtype=object), fmt="", cmap="RdBu_r", center=0, vmin=-30, vmax=30,
                linewidths=0.5, linecolor="white", annot_kws={"fontsize": 7.5},
                cbar_kws={"label": "% against the newest frontend", "shrink": min(1.0, 6 / (0.6 + 0.24 * len(names)))},
                ax=ax)
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.xaxis.tick_top()
    ax.tick_params(labelsize=7.5, length=0)
    fig.tight_layout(rect=(0.03, 0, 1, 1))   # room for a browser's font a little wider than matplotlib's
    return _svg(fig, "version view: each frontend's figure against the newest", "h")


CAL_MIN_Z = 500   # classes with fewer z scores take their mode's tails (verdict/pool.py): not drawn apart


def calibration(z_by_class: dict[str, tuple[list[float], float]]) -> str:
    """Per row class, the quantiles of its out-of-sample z scores (each start of the history against
    the others) against the normal's, with the Student-t the class is judged on: where the dots leave
    the diagonal the tails are heavier than normal, and the t must follow them."""
    import numpy as np
    from scipy import stats
    items = [(c, np.sort(np.asarray(z)), nu) for c, (z, nu) in sorted(z_by_class.items()) if len(z) >= CAL_MIN_Z]
    if not items:
        return ""
    sns = _setup()
    import matplotlib.pyplot as plt
    cols = min(2, len(items))   # two across: about 630 px, whole at 800
    rows = (len(items) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(FACET_W * cols, FACET_H * 1.2 * rows), squeeze=False)
    for ax, (c, z, nu) in zip(axes.flat, items):
        # 30 quantiles and the six most extreme on each side: the tails are what a run is judged in
        p = np.concatenate([(np.arange(1, 7) - 0.5) / len(z), np.linspace(0.01, 0.99, 30),
                            1 - (np.arange(1, 7) - 0.5) / len(z)])
        normal = stats.norm.ppf(p)
        qz = np.quantile(z, p)
        sns.scatterplot(x=normal, y=qz, s=8, linewidth=0, color=COLOURS.get(c.split()[0], "#555"), ax=ax)
        lim = max(4.0, float(np.abs(normal).max()))
        grid = np.linspace(-lim, lim, 50)
        ax.plot(grid, grid, color="#999", lw=0.8, ls="--")
        ax.plot(grid, stats.t.ppf(stats.norm.cdf(grid), nu), color="#b91c1c", lw=0.9)
        ax.set_title(f"{c} (t, ν {nu:.0f}; {len(z)} z)", fontsize=8)
        ax.set_xlabel("normal quantile")
        ax.set_ylabel("z")
        ax.set_ylim(-max(8.0, lim), max(8.0, lim))
    for ax in list(axes.flat)[len(items):]:
        ax.axis("off")
    fig.tight_layout()
    return _svg(fig, "calibration of the verdict model per row class", "cal")


def power(curves: dict[str, list[float]], changes: tuple) -> str:
    """The chance a slowdown is caught alone against its size, per row class (the mean over the judged
    run's rows of the class)."""
    if not curves:
        return ""
    sns = _setup()
    import matplotlib.pyplot as plt
    import pandas as pd
    df = pd.DataFrame([{"class": c, "slowdown %": x * 100, "caught": y} for c, ys in curves.items()
                       for x, y in zip(changes, ys)])
    fig, ax = plt.subplots(figsize=(FACET_W * 2.2, FACET_H * 1.6))
    sns.lineplot(data=df, x="slowdown %", y="caught", hue="class", marker="o", ax=ax)
    ax.set_xscale("log")
    ax.set_xticks([x * 100 for x in changes], [f"{x * 100:g}" for x in changes])
    ax.axhline(0.8, color="#999", ls="--", lw=0.8)
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7, ncol=2, frameon=False)
    fig.tight_layout()
    return _svg(fig, "power per row class: chance a slowdown is caught alone", "pow")


AB_COLOURS = {"SAME": "#777777", "UNSURE": "#d9a400", "SLOWER": "#b91c1c", "FASTER": "#1f5fa8",
              "KERNEL CHANGED": "#7d3c98"}


def ab_trend(facets: list[dict], ticks: list[str]) -> str:
    """One panel per row that moved in any A/B job of a series: each job's paired change (dot, in
    its verdict's colour) with its interval (bar), at the job's place among the jobs shown (evenly
    spaced, dated ticks); 0 dashed. `facets`: {title, verdict, points: [(x, change %, low %, high %,
    verdict)]}, a point per job that judged the row."""
    if not facets:
        return ""
    sns = _setup()
    import pandas as pd
    from matplotlib import ticker
    n = len(ticks)
    step = max(1, (n + 2) // 3)
    out = []
    for f in facets:
        fig, ax = _panel(FACET_W, FACET_H)
        pts = pd.DataFrame(f["points"], columns=["x", "change", "low", "high", "verdict"])
        bars = pts.dropna(subset=["low", "high"])
        ax.axhline(0, color="#888", lw=0.8, ls="--", zorder=0)
        ax.vlines(bars.x, bars.low, bars.high, color="#999", lw=1.6, zorder=1)
        ax.set_xlabel(" ")
        ax.set_ylabel("B over A, %", fontsize=7.5)
        sns.scatterplot(data=pts, x="x", y="change", hue="verdict", palette=AB_COLOURS, hue_order=list(AB_COLOURS),
                        s=26, ax=ax, legend=False, zorder=3, linewidth=0)
        ax.yaxis.set_major_locator(ticker.MaxNLocator(4))
        ax.set_title(f["title"], fontsize=min(8.5, 8.5 * 40 / max(1, len(f["title"]))), loc="left",
                     color=AB_COLOURS.get(f["verdict"], "#222"), fontweight="bold")
        ax.tick_params(labelsize=7.5)
        ax.set_xlim(-0.6, n - 0.4)
        ax.set_xticks(range(0, n, step))
        ax.set_xticklabels([ticks[i] for i in range(0, n, step)], fontsize=7)
        out.append(_svg(fig, f"paired change per job of {f['title']}", "abt"))
    return _panels(out)


def ab_counts(jobs: list[dict], ticks: list[str]) -> str:
    """Per job, its rows by verdict as stacked bars (SAME, UNSURE, then the ones that moved): an
    UNSURE row is its own colour, never counted with SAME. `jobs`: {counts: {verdict: n}}."""
    if not jobs:
        return ""
    _setup()
    import numpy as np
    fig, ax = _panel(max(FACET_W, 0.45 * len(jobs) + 1.2), FACET_H + 0.2)
    bottom = np.zeros(len(jobs))
    for v in ("SAME", "UNSURE", "SLOWER", "FASTER", "KERNEL CHANGED"):
        ys = np.array([j["counts"].get(v, 0) for j in jobs], dtype=float)
        if ys.any():
            ax.bar(range(len(jobs)), ys, bottom=bottom, color=AB_COLOURS[v], label=v, width=0.7)
            bottom += ys
    ax.set_ylabel("rows", fontsize=7.5)
    step = max(1, (len(jobs) + 5) // 6)
    ax.set_xticks(range(0, len(jobs), step))
    ax.set_xticklabels([ticks[i] for i in range(0, len(jobs), step)], fontsize=7)
    ax.tick_params(labelsize=7.5)
    ax.legend(fontsize=6.5, frameon=False, ncol=3, loc="lower left", bbox_to_anchor=(0, 1.0))
    return _svg(fig, "rows per job by verdict", "abc")


def ab_job(rows: list[dict]) -> str:
    """One A/B job's every row (ab.png's chart): a panel per class, rows sorted by change, each row's
    change (dot, its verdict's colour) with its interval (bar); 0 dashed. `rows`: {class, change %,
    low %, high %, verdict}, rows with a change."""
    if not rows:
        return ""
    sns = _setup()
    import pandas as pd
    df = pd.DataFrame(rows).sort_values(["class", "change"]).reset_index(drop=True)
    df["rank"] = df.groupby("class").cumcount()
    out = []
    for cls in dict.fromkeys(df["class"]):
        sub = df[df["class"] == cls]
        fig, ax = _panel(FACET_W, FACET_H)
        bars = sub.dropna(subset=["low", "high"])
        ax.vlines(bars["rank"], bars["low"], bars["high"], color="#aaa", lw=0.8, zorder=1)
        ax.axhline(0, color="#888", lw=0.8, ls="--", zorder=0)
        ax.set_xlabel(" ")
        ax.set_ylabel("B over A, %", fontsize=7.5)
        sns.scatterplot(data=sub, x="rank", y="change", hue="verdict", palette=AB_COLOURS, hue_order=list(AB_COLOURS),
                        s=12, ax=ax, legend=False, zorder=3, linewidth=0)
        ax.set_title(f"{cls} ({len(sub)} rows)", fontsize=8.5, loc="left")
        ax.set_xlabel("")
        ax.set_xticks([])
        ax.tick_params(labelsize=7.5)
        out.append(_svg(fig, f"every row's paired change: {cls}", "abj"))
    return _panels(out)
