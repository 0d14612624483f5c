// report.html's drawing helpers: SVG line and bar charts, a canvas heatmap, tables. Every text
// from the data goes in through textContent or an attribute (never markup), and each helper
// returns how many marks it drew, which the page records on its figure (data-items) for the
// headless check (tests/python/html_report_check.py).
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function isNum(x) {
  return typeof x === "number" && Number.isFinite(x);
}

function fmt(x, digits) {
  if (!isNum(x)) return "-";
  const d = digits === undefined ? 3 : digits;
  return Math.abs(x) >= 1000 ? x.toFixed(0) : x.toPrecision(d);
}

// About five round ticks covering [lo, hi].
function niceTicks(lo, hi) {
  if (!(hi > lo)) hi = lo + 1;
  const raw = (hi - lo) / 5;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(t);
  return ticks;
}

const CAUSE_COLORS = {
  none: "#c8ccd2", worker: "#d62728", "stage-imbalance": "#ff7f0e", "seq-imbalance": "#9467bd",
  gc: "#2ca02c", comm: "#1f77b4", "cpu-delay": "#8c564b", hang: "#111111", unattributed: "#7f7f7f",
};
const EXTRA_COLORS = ["#17becf", "#bcbd22", "#e377c2", "#393b79", "#637939", "#843c39"];

function colorOf(name, index) {
  return CAUSE_COLORS[name] || EXTRA_COLORS[index % EXTRA_COLORS.length];
}

function legend(items) {
  const box = el("div", { class: "legend" });
  for (const it of items) {
    const entry = el("span", { class: "legend-entry" });
    entry.appendChild(el("span", { class: "swatch", style: "background:" + it.color }));
    entry.appendChild(document.createTextNode(it.label));
    box.appendChild(entry);
  }
  return box;
}

// Lines over columns 0..n-1 (labels: their steps, drawn under a few); a null y breaks its line.
// markers: vertical lines {x: column, color, label}. Returns the points drawn.
function lineChart(fig, labels, series, opts) {
  const xs = labels.map((_, i) => i);
  const W = 900, H = 240, L = 56, R = 12, T = 12, B = 34;
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img" });
  let ys = [];
  for (const s of series) ys = ys.concat(s.ys.filter(isNum));
  if (opts.baseline !== undefined) ys.push(opts.baseline);
  if (!xs.length || !ys.length) return 0;
  let lo = Math.min(...ys), hi = Math.max(...ys);
  if (opts.zero) lo = Math.min(0, lo);
  const pad = (hi - lo) * 0.06 || Math.abs(hi) * 0.05 || 1;
  lo -= opts.zero && lo === 0 ? 0 : pad;
  hi += pad;
  const x0 = xs[0], x1 = xs[xs.length - 1] === x0 ? x0 + 1 : xs[xs.length - 1];
  const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const sy = (y) => T + (1 - (y - lo) / (hi - lo)) * (H - T - B);
  for (const t of niceTicks(lo, hi)) {
    svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: sy(t), y2: sy(t), class: "grid" }));
    svg.appendChild(svgEl("text", { x: L - 6, y: sy(t) + 4, class: "tick", "text-anchor": "end" }, fmt(t)));
  }
  const every = Math.max(1, Math.ceil(xs.length / 8));
  xs.forEach((x, i) => {
    if (i % every === 0) svg.appendChild(svgEl("text", { x: sx(x), y: H - B + 16, class: "tick", "text-anchor": "middle" }, labels[i]));
  });
  svg.appendChild(svgEl("text", { x: (L + W - R) / 2, y: H - 4, class: "axis", "text-anchor": "middle" }, opts.xLabel));
  if (opts.baseline !== undefined) {
    svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: sy(opts.baseline), y2: sy(opts.baseline), class: "baseline" }));
  }
  for (const m of opts.markers || []) {
    if (!isNum(m.x) || m.x < x0 || m.x > x1) continue;
    const line = svgEl("line", { x1: sx(m.x), x2: sx(m.x), y1: T, y2: H - B, stroke: m.color, class: "marker" });
    line.appendChild(svgEl("title", {}, m.label));
    svg.appendChild(line);
  }
  let points = 0;
  series.forEach((s) => {
    let d = "";
    let pen = false;
    s.ys.forEach((y, i) => {
      if (!isNum(y)) { pen = false; return; }
      d += (pen ? "L" : "M") + sx(xs[i]).toFixed(1) + "," + sy(y).toFixed(1);
      pen = true;
      ++points;
    });
    const path = svgEl("path", { d: d, stroke: s.color, class: "series" + (s.dashed ? " dashed" : "") });
    path.appendChild(svgEl("title", {}, s.label));
    svg.appendChild(path);
  });
  fig.appendChild(svg);
  fig.appendChild(legend(series.map((s) => ({ label: s.label, color: s.color }))));
  return points;
}

// Stacked bars per x: stacks[name] = counts per column. Returns the bars drawn.
function stackedBars(fig, xs, labels, stacks, xLabel) {
  const W = 900, H = 200, L = 56, R = 12, T = 10, B = 34;
  const names = Object.keys(stacks);
  const totals = xs.map((_, i) => names.reduce((a, n) => a + (stacks[n][i] || 0), 0));
  const top = Math.max(1, ...totals);
  if (!xs.length || !names.length) return 0;
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img" });
  const bw = (W - L - R) / xs.length;
  const sy = (y) => T + (1 - y / top) * (H - T - B);
  for (const t of niceTicks(0, top).filter((t) => Number.isInteger(t))) {
    svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: sy(t), y2: sy(t), class: "grid" }));
    svg.appendChild(svgEl("text", { x: L - 6, y: sy(t) + 4, class: "tick", "text-anchor": "end" }, t));
  }
  let bars = 0;
  xs.forEach((x, i) => {
    let base = 0;
    names.forEach((n, k) => {
      const v = stacks[n][i] || 0;
      if (v <= 0) return;
      const rect = svgEl("rect", { x: L + i * bw + 0.5, width: Math.max(bw - 1, 0.8), y: sy(base + v),
                                   height: sy(base) - sy(base + v), fill: colorOf(n, k) });
      rect.appendChild(svgEl("title", {}, `${labels[i]}: ${n} x${v}`));
      svg.appendChild(rect);
      base += v;
      ++bars;
    });
  });
  const every = Math.max(1, Math.ceil(xs.length / 10));
  xs.forEach((x, i) => {
    if (i % every === 0) {
      svg.appendChild(svgEl("text", { x: L + (i + 0.5) * bw, y: H - B + 16, class: "tick", "text-anchor": "middle" }, x));
    }
  });
  svg.appendChild(svgEl("text", { x: (L + W - R) / 2, y: H - 4, class: "axis", "text-anchor": "middle" }, xLabel));
  fig.appendChild(svg);
  fig.appendChild(legend(names.map((n, k) => ({ label: n, color: colorOf(n, k) }))));
  return bars;
}

// Horizontal bars: rows [{label, value, color, note}], value as a share of `whole`.
function barList(fig, rows, whole, unit) {
  if (!rows.length) return 0;
  const W = 900, rowH = 22, L = 260, R = 150;
  const H = rows.length * rowH + 6;
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart bars", role: "img" });
  const top = Math.max(...rows.map((r) => r.value), 1e-12);
  rows.forEach((r, i) => {
    const y = 3 + i * rowH;
    svg.appendChild(svgEl("text", { x: L - 8, y: y + 15, class: "label", "text-anchor": "end" }, r.label));
    const rect = svgEl("rect", { x: L, y: y + 3, height: rowH - 6, width: Math.max(1, (r.value / top) * (W - L - R)),
                                 fill: r.color || "#4e79a7" });
    rect.appendChild(svgEl("title", {}, r.label));
    svg.appendChild(rect);
    const share = whole > 0 ? ` (${(100 * r.value / whole).toFixed(1)}%)` : "";
    svg.appendChild(svgEl("text", { x: W - R + 6, y: y + 15, class: "tick" }, fmt(r.value) + " " + unit + share));
  });
  fig.appendChild(svg);
  return rows.length;
}

function median(xs) {
  const v = xs.filter(isNum).sort((a, b) => a - b);
  return v.length ? v[Math.floor((v.length - 1) / 2)] : NaN;
}

// rows x cols values (values[col][row], null: nothing known) on a canvas, white at `lo`, dark
// red from the slowest row's median up: a steady straggler gets the full colour, while a step
// where the whole (shared) machine stalled saturates instead of washing it out. Full colour needs
// at least lo + minSpan, so that a clean run's jitter stays pale. Returns the cells drawn.
function heatmap(fig, values, rowLabels, colLabels, lo, minSpan) {
  const cols = values.length, rows = rowLabels.length;
  let hi = lo + minSpan, top = lo;
  for (let r = 0; r < rows; ++r) hi = Math.max(hi, median(values.map((c) => c && c[r])) || lo);
  values.forEach((c) => (c || []).forEach((v) => { if (isNum(v) && v > top) top = v; }));
  const cw = Math.max(2, Math.min(24, Math.floor(760 / Math.max(cols, 1))));
  const rh = Math.max(2, Math.min(20, Math.floor(480 / Math.max(rows, 1))));
  const L = rh >= 10 ? 180 : 60, T = 6, B = 30;
  const canvas = el("canvas", { width: L + cols * cw + 8, height: T + rows * rh + B, class: "heatmap" });
  const g = canvas.getContext("2d");
  g.fillStyle = "#ffffff";
  g.fillRect(0, 0, canvas.width, canvas.height);
  const shade = (v) => {
    const t = hi > lo ? Math.min(1, Math.max(0, (v - lo) / (hi - lo))) : 0;
    return `rgb(${Math.round(255 - 75 * t)},${Math.round(247 - 220 * t)},${Math.round(240 - 215 * t)})`;
  };
  let cells = 0;
  values.forEach((col, c) => {
    if (!col) return;
    col.forEach((v, r) => {
      if (!isNum(v)) return;
      g.fillStyle = shade(v);
      g.fillRect(L + c * cw, T + r * rh, cw, rh);
      ++cells;
    });
  });
  g.fillStyle = "#333";
  g.font = "11px sans-serif";
  g.textAlign = "right";
  const labelEvery = Math.max(1, Math.ceil(12 / rh));
  rowLabels.forEach((label, r) => {
    if (r % labelEvery === 0) g.fillText(label, L - 4, T + r * rh + Math.min(rh, 12) - 1, L - 8);
  });
  g.textAlign = "center";
  const widest = Math.max(1, ...colLabels.map((l) => String(l).length));
  const colEvery = Math.max(1, Math.ceil((widest * 7 + 10) / cw));
  colLabels.forEach((label, c) => {
    if (c % colEvery === 0) g.fillText(String(label), L + (c + 0.5) * cw, T + rows * rh + 14);
  });
  canvas.addEventListener("mousemove", (ev) => {
    const box = canvas.getBoundingClientRect();
    const c = Math.floor((ev.clientX - box.left - L) / cw), r = Math.floor((ev.clientY - box.top - T) / rh);
    const v = values[c] && values[c][r];
    canvas.title = isNum(v) ? `${rowLabels[r]}, steps ${colLabels[c]}: S_w ${fmt(v)}` : "";
  });
  fig.appendChild(canvas);
  fig.appendChild(legend([{ label: `S_w ${fmt(lo)}`, color: shade(lo) },
                          { label: top > hi ? `S_w ${fmt(hi)} and above (largest ${fmt(top)})` : `S_w ${fmt(hi)}`, color: shade(hi) }]));
  return cells;
}

// A table: header names and rows of cell values (text). Returns the rows.
function table(fig, header, rows) {
  const t = el("table");
  const head = el("tr");
  header.forEach((h) => head.appendChild(el("th", {}, h)));
  t.appendChild(head);
  rows.forEach((row) => {
    const tr = el("tr");
    row.forEach((cell) => tr.appendChild(el("td", {}, cell)));
    t.appendChild(tr);
  });
  fig.appendChild(t);
  return rows.length;
}
