"""The audit's sampled stacks as an icicle chart: one self-contained HTML file (inline script and
style, no network), the step at the top, each frame below its caller, the callee its innermost
user line was running as the last box, widths in µs per step. Click a box to zoom in, the top box
to zoom out; `#zoom=<box id>` in the address opens zoomed (the browser test uses it)."""
from __future__ import annotations

import html
import json

KIND_COLOURS = {"torch op": "#f2a65a", "cuDNN frontend": "#76b041", "dispatcher": "#d1495b", "operator": "#edae49",
                "Python": "#9aa5b1", "call": "#c3b299"}
USER, LIBRARY = "#6aa9d8", "#b9c9d6"


def tree(sampling: dict) -> dict:
    """{name, value (µs/step), kind, children} from audit.json's `sampling`."""
    root: dict = {"name": "step", "value": 0.0, "kind": "step", "children": {}}
    for st in sampling.get("stacks") or ():
        us = st["us"]
        root["value"] += us
        node: dict = root
        path = [(f"{f[2]} · {f[0]}:{f[1]}", "user" if f[3] else "library") for f in st.get("frames") or ()]
        path.append((f"{st['callee']} [{st['kind']}]", st["kind"]))
        for name, kind in path:
            node = node["children"].setdefault(name, {"name": name, "value": 0.0, "kind": kind, "children": {}})
            node["value"] += us
    for extra, key in (("between steps (the loop)", "loop_us"), ("outside the step (sync after a round)", "outside_us")):
        if sampling.get(key):
            root["value"] += sampling[key]
            root["children"][extra] = {"name": extra, "value": sampling[key], "kind": "harness", "children": {}}
    return _listed(root)


def _listed(node: dict) -> dict:
    kids = sorted(node["children"].values(), key=lambda n: -n["value"])
    return {"name": node["name"], "value": node["value"], "kind": node["kind"], "children": [_listed(k) for k in kids]}


def render_html(root: dict, title: str) -> str:
    data = json.dumps(root).replace("</", "<\\/")
    colours = json.dumps(dict(KIND_COLOURS, user=USER, library=LIBRARY, step="#4c6a92", harness="#dddddd"))
    return PAGE.replace("@TITLE@", html.escape(title)).replace("@DATA@", data).replace("@COLOURS@", colours)


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>@TITLE@</title>
<style>
body{font:13px system-ui,sans-serif;margin:16px;color:#222}
#chart{position:relative;width:100%;border-top:1px solid #ccc}
.box{position:absolute;height:19px;box-sizing:border-box;border:1px solid #fff;overflow:hidden;white-space:nowrap;
text-overflow:ellipsis;padding:1px 4px;cursor:pointer;font-size:12px}
.box:hover{filter:brightness(0.9)}
#info{margin:8px 0;min-height:1.3em}
.key span{display:inline-block;padding:1px 6px;margin-right:4px;border-radius:2px}
</style></head><body>
<h2>@TITLE@</h2>
<p>Host time per step by stack, as the line sampler saw it (µs per step; the widths add up). The last box of a
stack is what its innermost line of your code was running. Click a box to zoom in, the top box to zoom out.</p>
<p class="key" id="key"></p>
<div id="info">&nbsp;</div>
<div id="chart"></div>
<script>
const ROOT = @DATA@;
const COLOURS = @COLOURS@;
const ROW = 20;
let nodes = [];
(function index(n, depth, x0, parent) {
  n.id = nodes.length; n.depth = depth; n.x0 = x0; n.x1 = x0 + n.value; n.parent = parent; nodes.push(n);
  let x = x0;
  for (const c of n.children) { index(c, depth + 1, x, n); x += c.value; }
})(ROOT, 0, 0, null);
const chart = document.getElementById("chart");
chart.style.height = (Math.max(...nodes.map(n => n.depth)) + 1) * ROW + "px";
document.getElementById("key").innerHTML = Object.entries(COLOURS)
  .map(([k, c]) => `<span style="background:${c}">${k}</span>`).join("");
function label(n) {
  const share = ROOT.value > 0 ? (100 * n.value / ROOT.value).toFixed(1) : "0";
  return `${n.name}: ${n.value.toFixed(2)} µs/step (${share} %)`;
}
function draw(focus) {
  chart.innerHTML = "";
  const span = focus.x1 - focus.x0 || 1;
  for (const n of nodes) {
    const inside = n.x0 >= focus.x0 - 1e-9 && n.x1 <= focus.x1 + 1e-9;
    const above = n.x0 <= focus.x0 + 1e-9 && n.x1 >= focus.x1 - 1e-9 && n.depth < focus.depth;
    if (!(inside || above)) continue;
    const left = above ? 0 : (n.x0 - focus.x0) / span * 100;
    const width = above ? 100 : (n.x1 - n.x0) / span * 100;
    if (width < 0.05) continue;
    const d = document.createElement("div");
    d.className = "box"; d.id = "n" + n.id; d.dataset.width = width.toFixed(3);
    d.style.left = left + "%"; d.style.width = width + "%"; d.style.top = n.depth * ROW + "px";
    d.style.background = COLOURS[n.kind] || "#ccc";
    d.textContent = n.name; d.title = label(n);
    d.onclick = () => { draw(n === focus && n.parent ? n.parent : n); };
    d.onmouseover = () => { document.getElementById("info").textContent = label(n); };
    chart.appendChild(d);
  }
  document.body.dataset.focus = focus.id;
}
const m = /zoom=(\\d+)/.exec(location.hash);
draw(m && nodes[+m[1]] ? nodes[+m[1]] : ROOT);
</script></body></html>
"""
