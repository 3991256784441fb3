"""CSS and JavaScript of the HTML report (:mod:`opgraph.export.html.report`), inlined in the page.

The script draws every chart as SVG from the JSON in ``<script id="opgraph-data">``:
stacked bars (critical path per window, idle per stream), horizontal bars (blamed ops),
bars with error whiskers (overheads), icicles (host / device breakdowns) and a log-log
scatter with roofs (roofline). Hover shows values; drag a box to zoom; double-click resets;
icicle entries zoom on click. No library, no network.
"""

CSS = r"""
:root{--fg:#1d2630;--muted:#5b6875;--line:#d8dee4;--bg:#fff;--soft:#f5f7f9;--accent:#ff7f0e}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
header{padding:18px 28px 8px;border-bottom:1px solid var(--line);position:sticky;top:0;background:#fff;z-index:5}
h1{font-size:20px;margin:0 0 2px}
h2{font-size:17px;margin:28px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}
.meta{color:var(--muted);font-size:12px;word-break:break-all}
nav{margin-top:6px}nav a{margin-right:14px;color:#1f5fbf;text-decoration:none;font-size:13px}
main{padding:0 28px 40px;max-width:1400px}
.cards{display:flex;flex-wrap:wrap;gap:12px}
.card{flex:1 1 200px;border:1px solid var(--line);border-radius:8px;padding:10px 14px;background:var(--soft)}
.ct{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
.cv{font-size:26px;font-weight:600;margin:2px 0}
.cv .unit{font-size:15px;font-weight:400;color:var(--muted)}
.cs{font-size:12px;color:var(--muted)}
.bound{color:var(--accent)}
figure.fig{margin:14px 0 8px;border:1px solid var(--line);border-radius:8px;padding:8px 10px}
figcaption{font-weight:600;font-size:13px;margin-bottom:4px}
.hint{font-weight:400;color:var(--muted);font-size:12px;margin-left:10px}
.chart{position:relative;width:100%;user-select:none}
.chart svg{display:block}
.legend{font-size:12px;color:var(--muted);height:20px;overflow:hidden;white-space:nowrap}
.legend span{display:inline-block;margin-right:12px}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:-1px;border-radius:2px}
table{border-collapse:collapse;margin:8px 0;font-size:12.5px}
th,td{border-bottom:1px solid var(--line);padding:3px 10px;text-align:right;vertical-align:top}
th{background:var(--soft);font-weight:600}
td:first-child,th:first-child,td.l{text-align:left}
table.health td{text-align:left}
td .name{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.num,.val{font-variant-numeric:tabular-nums}
.note{color:var(--muted);font-size:13px}.note.ok{color:#2e7d32}
.zoombar{margin:2px 0 6px}.zoombar button{margin-right:4px;min-width:34px}
.cpsvg{max-height:900px;overflow:auto;border:1px solid var(--line);border-radius:4px;background:#fff}
#tip{position:fixed;display:none;pointer-events:none;background:rgba(25,30,38,.94);color:#fff;font-size:12px;
 padding:6px 8px;border-radius:4px;max-width:460px;z-index:20;word-break:break-word}
#tip b{color:#ffd08a}
.brushrect{fill:rgba(31,95,191,.12);stroke:#1f5fbf;stroke-dasharray:3 2}
.axis text{font-size:11px;fill:#5b6875}.axis line,.axis path{stroke:#c7ced6}
.grid line{stroke:#eef1f4}
footer{margin-top:34px;color:var(--muted);font-size:12px}
"""

JS = r"""
(function(){
"use strict";
var D = JSON.parse(document.getElementById("opgraph-data").textContent);
var NS = "http://www.w3.org/2000/svg";
var tip = document.getElementById("tip");
// one colour per category and cause, and their order: the catalog (opgraph/time_categories.py)
var CAT = D.categories.colours, PATH_CATS = D.categories.path, IDLE_CAUSES = D.categories.idle;
var PALETTE = ["#4e79a7","#f28e2b","#59a14f","#e15759","#76b7b2","#edc948","#b07aa1","#ff9da7","#9c755f","#bab0ac"];

function S(tag, attrs, parent){ var e = document.createElementNS(NS, tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]); if (parent) parent.appendChild(e); return e; }
function esc(s){ return String(s).replace(/[&<>"]/g, function(c){
  return {"&":"&amp;","<":"&lt;",">":"&gt;","\"":"&quot;"}[c]; }); }
function fmt(v, nd){ if (v === null || v === undefined || !isFinite(v)) return "–";
  return Number(v).toLocaleString("en-US", {maximumFractionDigits: nd === undefined ? 3 : nd}); }
function showTip(ev, h){ tip.innerHTML = h; tip.style.display = "block";
  var x = ev.clientX > window.innerWidth / 2 ? ev.clientX - tip.offsetWidth - 14 : ev.clientX + 14, y = ev.clientY + 14;
  tip.style.left = Math.max(4, Math.min(x, window.innerWidth - tip.offsetWidth - 8)) + "px";
  tip.style.top = Math.max(4, Math.min(y, window.innerHeight - tip.offsetHeight - 8)) + "px"; }
function hideTip(){ tip.style.display = "none"; }
function hover(el, h){ el.addEventListener("mousemove", function(ev){ showTip(ev, typeof h === "function" ? h() : h); });
  el.addEventListener("mouseleave", hideTip); }
function midtrunc(s, n){ s = String(s); var k = Math.floor((n - 1) / 3); return s.length > n ? s.slice(0, k) + "…" + s.slice(s.length - (n - 1 - k)) : s; }
function trunc(s, n){ s = String(s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }
function linTicks(lo, hi, n){ var span = (hi - lo) || 1, step0 = span / n;
  var mag = Math.pow(10, Math.floor(Math.log10(step0))), err = step0 / mag;
  var step = (err >= 7.5 ? 10 : err >= 3.5 ? 5 : err >= 1.5 ? 2 : 1) * mag, out = [];
  for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(v);
  return out; }
function logTicks(lo, hi){ var out = [];
  for (var e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++){
    var v = Math.pow(10, e); if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v); }
  return out; }
function tickLabel(v){ var a = Math.abs(v);
  if (a >= 1e6 || (a > 0 && a < 1e-3)) return v.toExponential(0);
  return fmt(v, a < 1 ? 3 : a < 10 ? 2 : 0); }
function legend(el, items){ var d = document.createElement("div"); d.className = "legend";
  d.innerHTML = items.map(function(it){ return '<span><i style="background:' + it.color + '"></i>' + esc(it.name) + "</span>"; }).join("");
  el.appendChild(d); return d; }
function newSvg(el, h){ var w = Math.max(320, el.clientWidth || 800);
  return S("svg", {width: w, height: h, viewBox: "0 0 " + w + " " + h}, el); }
function local(svg, ev){ var r = svg.getBoundingClientRect(); return {x: ev.clientX - r.left, y: ev.clientY - r.top}; }

// drag a box inside the plot area to zoom, double-click to reset
function brush(svg, plot, onZoom, onReset){
  var start = null, rect = null;
  svg.addEventListener("mousedown", function(ev){ var p = local(svg, ev);
    if (p.x < plot.x || p.x > plot.x + plot.w || p.y < plot.y || p.y > plot.y + plot.h) return;
    start = p; rect = S("rect", {"class": "brushrect", x: p.x, y: p.y, width: 0, height: 0}, svg); ev.preventDefault(); });
  svg.addEventListener("mousemove", function(ev){ if (!start) return; var p = local(svg, ev);
    rect.setAttribute("x", Math.min(p.x, start.x)); rect.setAttribute("y", Math.min(p.y, start.y));
    rect.setAttribute("width", Math.abs(p.x - start.x)); rect.setAttribute("height", Math.abs(p.y - start.y)); });
  function end(ev){ if (!start) return; var p = local(svg, ev), s = start; start = null; rect.remove();
    if (Math.abs(p.x - s.x) > 6 || Math.abs(p.y - s.y) > 6)
      onZoom(Math.min(p.x, s.x), Math.max(p.x, s.x), Math.min(p.y, s.y), Math.max(p.y, s.y)); }
  svg.addEventListener("mouseup", end);
  svg.addEventListener("mouseleave", function(){ if (start){ start = null; rect.remove(); } });
  svg.addEventListener("dblclick", onReset);
}

// ------------------------------------------------------------------ bar charts
// cfg: labels, series [{name, color, values, colors?, errors?}], horizontal, unit
function barChart(el, cfg){
  var n = cfg.labels.length, lo = 0, hi = n;
  var lg = cfg.series.length > 1 || cfg.legend ? legend(el, cfg.legendItems || cfg.series) : null;
  function render(){
    var old = el.querySelector("svg"); if (old) old.remove();
    var H = el.clientHeight - (lg ? 22 : 0), svg = newSvg(el, Math.max(120, H)), W = +svg.getAttribute("width");
    H = +svg.getAttribute("height");
    var idx = []; for (var i = lo; i < hi; i++) idx.push(i);
    var maxv = 0;
    idx.forEach(function(i){ var t = 0; cfg.series.forEach(function(s){ var v = s.values[i] || 0;
      var e = s.errors ? (s.errors[i] || 0) : 0; t = cfg.stacked === false ? Math.max(t, v + e) : t + v + e; });
      maxv = Math.max(maxv, t); });
    if (maxv <= 0) maxv = 1;
    var hz = !!cfg.horizontal;
    var plot = hz ? {x: 250, y: 8, w: W - 270, h: H - 44} : {x: 64, y: 10, w: W - 76, h: H - (idx.length > 12 ? 88 : 42)};
    var ticks = linTicks(0, maxv, hz ? 6 : 5), top = ticks[ticks.length - 1] > maxv ? ticks[ticks.length - 1] : maxv;
    var g = S("g", {"class": "axis"}, svg), grid = S("g", {"class": "grid"}, svg);
    ticks.forEach(function(t){
      if (hz){ var x = plot.x + plot.w * t / top;
        S("line", {x1: x, x2: x, y1: plot.y, y2: plot.y + plot.h}, grid);
        S("text", {x: x, y: plot.y + plot.h + 14, "text-anchor": "middle"}, g).textContent = tickLabel(t);
      } else { var y = plot.y + plot.h - plot.h * t / top;
        S("line", {x1: plot.x, x2: plot.x + plot.w, y1: y, y2: y}, grid);
        S("text", {x: plot.x - 6, y: y + 4, "text-anchor": "end"}, g).textContent = tickLabel(t); } });
    if (cfg.unit){ var ut = hz ? S("text", {x: plot.x + plot.w, y: plot.y + plot.h + 28, "text-anchor": "end"}, g)
                               : S("text", {x: 4, y: plot.y + 4}, g); ut.textContent = cfg.unit; }
    var band = (hz ? plot.h : plot.w) / Math.max(1, idx.length), bw = Math.max(1, Math.min(band * 0.72, hz ? 26 : 90));
    var ns = cfg.series.length, bars = S("g", {}, svg);
    idx.forEach(function(i, j){
      var acc = 0, total = 0;
      cfg.series.forEach(function(s){ total += s.values[i] || 0; });
      cfg.series.forEach(function(s, k){
        var v = s.values[i] || 0; if (v <= 0 && !s.errors) return;
        var off = cfg.stacked === false ? 0 : acc, sub = cfg.stacked === false ? bw / ns : bw;
        var pos = (hz ? plot.y : plot.x) + j * band + (band - bw) / 2 + (cfg.stacked === false ? k * sub : 0);
        var color = s.colors ? s.colors[i] : s.color, r;
        if (hz) r = S("rect", {x: plot.x + plot.w * off / top, y: pos, width: Math.max(0.5, plot.w * v / top), height: sub, fill: color}, bars);
        else r = S("rect", {x: pos, y: plot.y + plot.h - plot.h * (off + v) / top, width: sub, height: Math.max(0.5, plot.h * v / top), fill: color}, bars);
        if (s.errors && s.errors[i]){ var e = s.errors[i], c = pos + sub / 2;
          if (!hz){ var y1 = plot.y + plot.h - plot.h * Math.max(0, v - e) / top, y2 = plot.y + plot.h - plot.h * (v + e) / top;
            S("line", {x1: c, x2: c, y1: y1, y2: y2, stroke: "#333", "stroke-width": 1}, bars);
            S("line", {x1: c - 3, x2: c + 3, y1: y2, y2: y2, stroke: "#333", "stroke-width": 1}, bars); } }
        hover(r, function(){ return "<b>" + esc(cfg.labels[i]) + "</b><br>" + esc(s.name) + ": " + fmt(v) + " " + esc(cfg.unitShort || "")
          + (ns > 1 && total > 0 ? " (" + fmt(100 * v / total, 2) + " %)" : "")
          + (s.errors ? "<br>std " + fmt(s.errors[i]) + (s.n ? ", n " + fmt(s.n[i], 0) : "") : "")
          + (cfg.extra ? cfg.extra(i) : ""); });
        acc += v; });
    });
    var showLabels = idx.length <= (hz ? 60 : 48);
    if (showLabels) idx.forEach(function(i, j){
      var c = (hz ? plot.y : plot.x) + j * band + band / 2, t;
      if (hz) t = S("text", {x: plot.x - 6, y: c + 4, "text-anchor": "end"}, g);
      else if (idx.length > 12) t = S("text", {x: c, y: plot.y + plot.h + 10, "text-anchor": "end", transform: "rotate(-35 " + c + " " + (plot.y + plot.h + 10) + ")"}, g);
      else t = S("text", {x: c, y: plot.y + plot.h + 15, "text-anchor": "middle"}, g);
      t.textContent = hz ? midtrunc(cfg.labels[i], 40) : trunc(cfg.labels[i], idx.length > 12 ? 22 : Math.max(6, Math.floor(band / 6.5)));
      if (String(cfg.labels[i]).length > 22){ var tt = S("title", {}, t); tt.textContent = cfg.labels[i]; } });
    S("line", {x1: plot.x, x2: hz ? plot.x : plot.x + plot.w, y1: plot.y + plot.h, y2: hz ? plot.y : plot.y + plot.h}, g);
    brush(svg, plot, function(x0, x1, y0, y1){
      var a = hz ? y0 - plot.y : x0 - plot.x, b = hz ? y1 - plot.y : x1 - plot.x;
      var nlo = lo + Math.max(0, Math.floor(a / band)), nhi = lo + Math.min(idx.length, Math.ceil(b / band));
      if (nhi > nlo){ lo = nlo; hi = nhi; render(); } }, function(){ lo = 0; hi = n; render(); });
  }
  render(); return el;
}

// ------------------------------------------------------------------ scatter (roofline)
function scatter(el, cfg){
  var pts = cfg.points, lg = legend(el, cfg.legendItems);
  function ext(a, f){ var lo = Infinity, hi = -Infinity; a.forEach(function(p){ var v = f(p); if (v > 0){ lo = Math.min(lo, v); hi = Math.max(hi, v); } }); return [lo, hi]; }
  var ex = ext(pts, function(p){ return p.x; }), ey = ext(pts, function(p){ return p.y; });
  if (!(ex[0] < Infinity) || !(ey[0] < Infinity)){ ex = [0.1, 100]; ey = [0.001, 1]; }
  (cfg.lines || []).forEach(function(l){ if (l.ridge > 0 && l.peak > 0){
    ex = [Math.min(ex[0], l.ridge), Math.max(ex[1], l.ridge)]; ey = [ey[0], Math.max(ey[1], l.peak)]; } });
  var full = [ex[0] / 2, ex[1] * 2, ey[0] / 2, ey[1] * 2], dom = full.slice();
  function render(){
    var old = el.querySelector("svg"); if (old) old.remove();
    var svg = newSvg(el, el.clientHeight - 22), W = +svg.getAttribute("width"), H = +svg.getAttribute("height");
    var plot = {x: 70, y: 10, w: W - 90, h: H - 50};
    var lx = function(v){ return plot.x + plot.w * (Math.log10(v) - Math.log10(dom[0])) / (Math.log10(dom[1]) - Math.log10(dom[0])); };
    var ly = function(v){ return plot.y + plot.h - plot.h * (Math.log10(v) - Math.log10(dom[2])) / (Math.log10(dom[3]) - Math.log10(dom[2])); };
    var g = S("g", {"class": "axis"}, svg), grid = S("g", {"class": "grid"}, svg);
    logTicks(dom[0], dom[1]).forEach(function(t){ var x = lx(t); S("line", {x1: x, x2: x, y1: plot.y, y2: plot.y + plot.h}, grid);
      S("text", {x: x, y: plot.y + plot.h + 14, "text-anchor": "middle"}, g).textContent = tickLabel(t); });
    logTicks(dom[2], dom[3]).forEach(function(t){ var y = ly(t); S("line", {x1: plot.x, x2: plot.x + plot.w, y1: y, y2: y}, grid);
      S("text", {x: plot.x - 6, y: y + 4, "text-anchor": "end"}, g).textContent = tickLabel(t); });
    S("text", {x: plot.x + plot.w, y: plot.y + plot.h + 32, "text-anchor": "end"}, g).textContent = cfg.xLabel;
    S("text", {x: 12, y: plot.y + plot.h / 2, transform: "rotate(-90 12 " + (plot.y + plot.h / 2) + ")", "text-anchor": "middle"}, g).textContent = cfg.yLabel;
    S("rect", {x: plot.x, y: plot.y, width: plot.w, height: plot.h, fill: "none", stroke: "#c7ced6"}, g);
    var clipId = "clip" + Math.random().toString(36).slice(2);
    var cp = S("clipPath", {id: clipId}, svg); S("rect", {x: plot.x, y: plot.y, width: plot.w, height: plot.h}, cp);
    var area = S("g", {"clip-path": "url(#" + clipId + ")"}, svg);
    (cfg.lines || []).forEach(function(l){ var d = "", k;
      for (k = 0; k <= 80; k++){ var x = Math.pow(10, Math.log10(dom[0]) + (Math.log10(dom[1]) - Math.log10(dom[0])) * k / 80);
        var y = Math.min(l.peak, x * l.bw); d += (k ? "L" : "M") + lx(x).toFixed(1) + "," + ly(y).toFixed(1); }
      var p = S("path", {d: d, fill: "none", stroke: l.color, "stroke-width": 2, "stroke-dasharray": "6 3"}, area);
      hover(p, "<b>" + esc(l.name) + "</b><br>peak " + fmt(l.peak) + " TFLOP/s, DRAM " + fmt(l.bw * 1000) + " GB/s, ridge " + fmt(l.ridge, 2) + " FLOP/B"); });
    pts.forEach(function(p){ if (!(p.x > 0 && p.y > 0)) return;
      var c = S("circle", {cx: lx(p.x), cy: ly(p.y), r: p.r, fill: p.color, "fill-opacity": 0.7, stroke: "#333", "stroke-width": 0.6}, area);
      hover(c, p.html); });
    brush(svg, plot, function(x0, x1, y0, y1){
      var inv = function(px, a, b, o, len, flip){ var f = (px - o) / len; if (flip) f = 1 - f;
        return Math.pow(10, Math.log10(a) + f * (Math.log10(b) - Math.log10(a))); };
      dom = [inv(x0, dom[0], dom[1], plot.x, plot.w), inv(x1, dom[0], dom[1], plot.x, plot.w),
             inv(y1, dom[2], dom[3], plot.y, plot.h, true), inv(y0, dom[2], dom[3], plot.y, plot.h, true)];
      render(); }, function(){ dom = full.slice(); render(); });
  }
  render(); return el;
}

// ------------------------------------------------------------------ icicle
function icicle(el, roots, unit){
  var root = {name: "all", value: roots.reduce(function(a, r){ return a + (r.value || 0); }, 0), children: roots, parent: null};
  (function link(n, depth, hue){ (n.children || []).forEach(function(c, i){ c.parent = n;
    c.hue = depth === 0 ? (i * 67) % 360 : hue; link(c, depth + 1, c.hue); }); })(root, 0, 0);
  var focus = root;
  function depthOf(n){ var d = 0; (function f(x, k){ d = Math.max(d, k); (x.children || []).forEach(function(c){ f(c, k + 1); }); })(n, 0); return d; }
  function render(){
    var old = el.querySelector("svg"); if (old) old.remove();
    var levels = depthOf(focus) + 1, rowH = 28;
    el.style.height = (levels * rowH + 4) + "px";
    var svg = newSvg(el, levels * rowH + 4), W = +svg.getAttribute("width"), g = S("g", {}, svg);
    function draw(n, x, w, d){
      if (w < 0.5) return;
      var grey = n.kind === "others" || n.kind === "unaccounted";
      var color = n === root ? "#d0d6dc" : grey ? "#d9d9d9" : "hsl(" + n.hue + ",55%," + Math.min(88, 52 + d * 9) + "%)";
      var r = S("rect", {x: x + 0.5, y: d * rowH + 0.5, width: Math.max(0.5, w - 1), height: rowH - 1, fill: color, stroke: "#fff"}, g);
      r.style.cursor = "pointer";
      if (w > 36){ var t = S("text", {x: x + 4, y: d * rowH + rowH / 2 + 4, "font-size": 11, fill: "#1d2630"}, g);
        t.textContent = trunc(n.name, Math.floor((w - 8) / 6.2)); t.style.pointerEvents = "none"; }
      var par = n.parent ? n.parent.value : null;
      hover(r, "<b>" + esc(n.name) + "</b><br>" + fmt(n.value) + " " + esc(unit)
        + (par ? " · " + fmt(100 * n.value / par, 2) + " % of " + esc(n.parent.name) : "")
        + (n.count ? "<br>count " + fmt(n.count, 0) : ""));
      r.addEventListener("click", function(){ focus = (n === focus && n.parent) ? n.parent : n; hideTip(); render(); });
      var tot = 0; (n.children || []).forEach(function(c){ tot += c.value || 0; });
      var scale = n.value > 0 ? w / Math.max(n.value, tot) : 0, cx = x;
      (n.children || []).forEach(function(c){ var cw = (c.value || 0) * scale; draw(c, cx, cw, d + 1); cx += cw; });
    }
    draw(focus, 0, W, 0);
    svg.addEventListener("dblclick", function(){ focus = root; render(); });
  }
  render(); return el;
}

// ------------------------------------------------------------------ the charts of this report
var charts = {};
charts.cp_steps = function(el){ var cp = D.critical_path, ws = cp.windows;
  var cats = PATH_CATS.filter(function(c){ return ws.some(function(w){ return w.breakdown_us[c] > 0; }); });
  var seen = {}, labels = ws.map(function(w){ var k = w.name; seen[k] = (seen[k] || 0) + 1; return seen[k] > 1 ? k + " [" + seen[k] + "]" : k; });
  return barChart(el, {labels: labels, unit: "µs", unitShort: "µs", legend: true,
    series: cats.map(function(c){ return {name: c, color: CAT[c], values: ws.map(function(w){ return w.breakdown_us[c]; })}; }),
    extra: function(i){ return "<br>span " + fmt(ws[i].span_us) + " µs, bound by " + esc(ws[i].bound); }}); };
charts.idle_streams = function(el){ var st = D.idle.streams;
  var labels = st.map(function(s){ return "GPU " + s.device + " · stream " + s.stream; });
  var causes = IDLE_CAUSES.filter(function(c){ return st.some(function(x){ return x.causes_us[c] > 0; }); });
  return barChart(el, {labels: labels, unit: "idle µs", unitShort: "µs", legend: true,
    series: causes.map(function(c){ return {name: c, color: CAT[c], values: st.map(function(x){ return x.causes_us[c]; })}; }),
    extra: function(i){ return "<br>busy " + fmt(st[i].busy_us) + " µs of span " + fmt(st[i].span_us) + " µs"; }}); };
charts.idle_blame = function(el){ var b = D.idle.blame_top;
  return barChart(el, {labels: b.map(function(r){ return r.name; }), horizontal: true, unit: "µs blamed", unitShort: "µs",
    series: [{name: "CPU-induced idle blamed", color: "#e15759", values: b.map(function(r){ return r.blame_us; })}],
    extra: function(i){ return "<br>" + esc(b[i].kind) + ", " + fmt(b[i].share_pct, 2) + " % of CPU-induced idle, count " + b[i].count; }}); };
function tree(entries){ return (entries || []).map(function(e){
  return {name: e.name, value: e.time_us, kind: e.kind, count: e.count, children: tree(e.children)}; }); }
charts.icicle_host = function(el){ return icicle(el, D.breakdown_host.threads.map(function(t){
  return {name: t.name || ("thread " + t.tid), value: t.time_us, children: tree(t.entries)}; }), "µs"); };
charts.icicle_device = function(el){ return icicle(el, D.breakdown_device.streams.map(function(s){
  return {name: "GPU " + s.device + " · stream " + s.stream, value: s.device_us, children: tree(s.entries)}; }), "µs"); };
charts.roofline = function(el){ var R = D.roofline, dev = (R.devices || []).filter(function(d){ return d.table_name; })[0];
  var colors = {compute: "#4e79a7", memory: "#e15759", communication: "#b07aa1"}, items = [];
  var maxT = 0; R.rows.forEach(function(r){ maxT = Math.max(maxT, r.total_us || 0); });
  var pts = R.rows.filter(function(r){ return r.arithmetic_intensity > 0 && r.tflops > 0; }).map(function(r){
    var c = colors[r.bound] || "#9c755f";
    return {x: r.arithmetic_intensity, y: r.tflops, r: 3 + 11 * Math.sqrt((r.total_us || 0) / (maxT || 1)), color: c,
      html: "<b>" + esc(trunc(r.name, 160)) + "</b><br>" + fmt(r.arithmetic_intensity, 2) + " FLOP/B · " + fmt(r.tflops) + " TFLOP/s · "
        + fmt(r.gbps, 1) + " GB/s<br>% peak FLOP/s " + fmt(r.pct_peak_flops, 2) + " · % peak BW " + fmt(r.pct_peak_bw, 2)
        + "<br>" + fmt(r.count, 0) + " calls, " + fmt(r.total_us) + " µs · " + esc(r.bound || "") + " · " + esc(r.dtype || "")}; });
  Object.keys(colors).forEach(function(k){ items.push({name: k + "-bound", color: colors[k]}); });
  var lines = [];
  if (dev){ var dts = {}; R.rows.forEach(function(r){ if (r.dtype && dev.peak_tflops[r.dtype]) dts[r.dtype] = (dts[r.dtype] || 0) + (r.total_us || 0); });
    Object.keys(dts).sort(function(a, b){ return dts[b] - dts[a]; }).slice(0, 3).forEach(function(dt, i){
      var peak = dev.peak_tflops[dt], bw = dev.dram_gbps / 1000.0;
      lines.push({name: dev.table_name + " " + dt + " roof", peak: peak, bw: bw, ridge: peak / bw, color: ["#333", "#777", "#aaa"][i]});
      items.push({name: dt + " roof (" + fmt(peak) + " TFLOP/s)", color: ["#333", "#777", "#aaa"][i]}); }); }
  items.push({name: "size: total time", color: "#fff"});
  return scatter(el, {points: pts, lines: lines, legendItems: items, xLabel: "arithmetic intensity (FLOP/byte)", yLabel: "achieved TFLOP/s"}); };
charts.overheads = function(el){ var O = D.overheads, labels = [], vals = [], errs = [], ns = [], cols = [];
  function add(label, st, col){ if (!st) return; labels.push(label); vals.push(st.mean); errs.push(st.std); ns.push(st.n); cols.push(col); }
  add("T1 between ops", O.t1, "#4e79a7");
  Object.keys(O.t4 || {}).sort().forEach(function(k){ add("T4 " + k, O.t4[k], "#f28e2b"); });
  var ops = Object.keys(O.ops || {}).filter(function(k){ return (O.t2 || {})[k]; })
    .sort(function(a, b){ return O.ops[b].count - O.ops[a].count || (a < b ? -1 : 1); }).slice(0, 6);
  ops.forEach(function(k){ add("T2 " + k, O.t2[k], "#59a14f"); add("T3 " + k, (O.t3 || {})[k], "#76b7b2"); add("T5 " + k, (O.t5 || {})[k], "#edc948"); });
  return barChart(el, {labels: labels, unit: "µs", unitShort: "µs", legend: true,
    legendItems: [{name: "T1 between ops", color: "#4e79a7"}, {name: "T4 launch call", color: "#f28e2b"}, {name: "T2 op start → first launch", color: "#59a14f"},
      {name: "T3 last launch → op end", color: "#76b7b2"}, {name: "T5 between launches", color: "#edc948"}],
    series: [{name: "mean", color: "#4e79a7", colors: cols, values: vals, errors: errs, n: ns}]}); };
charts.cp_svg = function(el){ var svg = el.querySelector("svg"); if (!svg) throw new Error("no critical-path svg");
  var w0 = parseFloat(svg.getAttribute("width")) * 4 / 3, h0 = parseFloat(svg.getAttribute("height")) * 4 / 3, z = 1;
  function fit(){ z = Math.min(1, (el.clientWidth - 4) / w0); apply(); }
  function apply(){ svg.setAttribute("width", (w0 * z).toFixed(0)); svg.setAttribute("height", (h0 * z).toFixed(0)); }
  var bar = el.parentNode.querySelector(".zoombar");
  if (bar) bar.addEventListener("click", function(ev){ var f = parseFloat(ev.target.getAttribute("data-z"));
    if (isNaN(f)) return; if (f === 0) fit(); else { z = z * f; apply(); } });
  fit(); return el; };

var done = 0, failed = 0;
document.querySelectorAll("[data-chart]").forEach(function(el){
  var k = el.getAttribute("data-chart");
  try { if (!charts[k]) throw new Error("no chart named " + k); charts[k](el); done++; el.setAttribute("data-rendered", "1"); }
  catch (e){ failed++; el.setAttribute("data-rendered", "0"); console.error("opgraph chart " + k + ": " + e); }
});
document.body.setAttribute("data-charts", done + "/" + (done + failed));
var rt; window.addEventListener("resize", function(){ clearTimeout(rt); rt = setTimeout(function(){
  document.querySelectorAll("[data-chart]").forEach(function(el){ var k = el.getAttribute("data-chart");
    if (k === "cp_svg") return; el.innerHTML = ""; try { charts[k](el); } catch (e){ console.error(e); } }); }, 200); });
})();
"""
