// report.html's page: reads the embedded data (report.json's object and the series over time) and
// draws each figure. Every section of the data is optional (a report written before the ledger
// existed, an offline report without alarms): a figure without data says what is missing. A
// figure that fails to draw says so on the page and in the console, and the others still draw.

const DATA = JSON.parse(document.getElementById("sp-data").textContent);
const REPORT = DATA.report || {};
const HISTORY = DATA.history || null;
const MAIN = document.getElementById("sp-report");

function figure(name, title, caption) {
  const fig = el("figure", { class: "plot", "data-plot": name });
  fig.appendChild(el("h2", {}, title));
  if (caption) fig.appendChild(el("p", { class: "caption" }, caption));
  MAIN.appendChild(fig);
  return fig;
}

function draw(name, title, caption, fn) {
  const fig = figure(name, title, caption);
  try {
    const items = fn(fig);
    fig.setAttribute("data-items", String(items));
  } catch (e) {
    fig.setAttribute("data-error", String(e && e.message));
    fig.appendChild(el("p", { class: "error" }, "could not draw: " + String(e && e.message)));
    console.error("straggler_probe report: " + name + ": " + String(e && e.stack));
  }
}

function noData(fig, why) {
  fig.appendChild(el("p", { class: "no-data" }, why));
  fig.setAttribute("data-empty", why);
  return 0;
}

// The report's own word on a figure without data (the offline report has no alarms).
function note(name) {
  const notes = REPORT.notes;
  return notes && typeof notes[name] === "string" ? notes[name] : "";
}

function rankPlace(rank) {
  const row = (REPORT.ranks || []).find((r) => r && r.rank === rank);
  if (!row) return { host: "-", gpu: "-" };
  return { host: row.host || "-", gpu: isNum(row.device) && row.device >= 0 ? String(row.device) : "-" };
}

function columnLabels() {
  const c = HISTORY.columns;
  return c.first.map((f, i) => (f === c.last[i] ? String(f) : `${f}-${c.last[i]}`));
}

function headline() {
  const run = REPORT.run || {};
  const steps = isNum(run.first_step) ? `steps ${run.first_step}-${run.last_step}` : "no steps yet";
  MAIN.appendChild(el("p", { class: "tool" }, (REPORT.tool || "straggler_probe") + ", " + steps));
  MAIN.appendChild(el("p", { class: run.complete === false ? "partial" : "complete" },
                      run.complete === false ? "Partial: " + (run.note || "written while the job ran")
                                             : "Final report."));
  const lost = REPORT.lost;
  const rows = [
    ["steps analysed", REPORT.steps_analyzed],
    ["mean S (real / ideal)", fmt(REPORT.mean_S)],
    ["mean step time", fmt(REPORT.mean_time_s) + " s"],
    ["mean ideal step time", fmt(REPORT.mean_ideal_s) + " s"],
    ["GPU time lost", lost && isNum(lost.lost_share) ? (100 * lost.lost_share).toFixed(2) + "%" : "no ledger"],
  ];
  const box = el("div", { class: "overview" });
  table(box, ["", ""], rows.map((r) => [r[0], r[1] === undefined ? "-" : r[1]]));
  MAIN.appendChild(box);
}

// The column holding `step` (or the first after it: a step in a gap of skipped ones), -1: none.
function columnOf(step) {
  const c = HISTORY.columns;
  for (let i = 0; i < c.first.length; ++i) if (c.last[i] >= step) return i;
  return -1;
}

function alarmMarkers() {
  const out = [];
  const at = (step) => columnOf(step);
  for (const a of REPORT.alarms || []) {
    const who = `${a.target || "job"} ${a.cause || ""}`;
    if (isNum(a.raised_step)) out.push({ x: at(a.raised_step), color: "#d62728", label: `alarm raised: ${who} at step ${a.raised_step}` });
    if (isNum(a.cleared_step)) out.push({ x: at(a.cleared_step), color: "#2ca02c", label: `alarm cleared: ${who} at step ${a.cleared_step}` });
  }
  return out;
}

function drawSlowdown(fig) {
  if (!HISTORY) return noData(fig, "no per-step series in this report");
  const c = HISTORY.columns;
  const series = [{ label: "S (real / ideal)", ys: c.S, color: "#d62728" }];
  if (HISTORY.steps_per_column > 1) series.push({ label: "S, slowest step of the column", ys: c.S_max, color: "#ff9896" });
  if (c.S_null && c.S_null.some(isNum)) series.push({ label: "S that jitter alone explains (null mean)", ys: c.S_null, color: "#7f7f7f", dashed: true });
  return lineChart(fig, columnLabels(), series, { xLabel: "step", baseline: 1, markers: alarmMarkers() });
}

function drawTimes(fig) {
  if (!HISTORY) return noData(fig, "no per-step series in this report");
  const c = HISTORY.columns;
  return lineChart(fig, columnLabels(), [
    { label: "measured step time (s)", ys: c.time_s, color: "#1f77b4" },
    { label: "ideal: straggler-free (s)", ys: c.ideal_s, color: "#2ca02c" },
  ], { xLabel: "step", zero: true });
}

function drawCauses(fig) {
  if (!HISTORY || !Object.keys(HISTORY.columns.causes || {}).length) return noData(fig, "no analysed step");
  return stackedBars(fig, HISTORY.columns.first, columnLabels(), HISTORY.columns.causes, "step");
}

function sortedEntries(obj, n) {
  return Object.entries(obj || {}).filter((e) => isNum(e[1])).sort((a, b) => b[1] - a[1]).slice(0, n);
}

function drawLedger(fig) {
  const lost = REPORT.lost;
  if (!lost || typeof lost !== "object") return noData(fig, "no ledger in this report");
  const whole = lost.gpu_seconds;
  fig.appendChild(el("p", { class: "headline" },
    `lost ${fmt(lost.lost_gpu_seconds)} of ${fmt(whole)} GPU-seconds` +
    (isNum(lost.lost_share) ? ` (${(100 * lost.lost_share).toFixed(2)}%)` : "") +
    (isNum(lost.fixable_gpu_seconds) ? `; fixing the named culprits would give back ${fmt(lost.fixable_gpu_seconds)}` : "")));
  const rows = [{ label: "useful (ideal) GPU-seconds", value: (whole || 0) - (lost.lost_gpu_seconds || 0), color: "#2ca02c" },
                { label: "lost GPU-seconds", value: lost.lost_gpu_seconds || 0, color: "#d62728" }];
  sortedEntries(lost.by_cause, 10).forEach(([k, v], i) => rows.push({ label: "cause " + k, value: v, color: colorOf(k, i) }));
  sortedEntries(lost.by_host, 10).forEach(([k, v]) => rows.push({ label: "host " + k, value: v, color: "#9467bd" }));
  sortedEntries(lost.by_stage, 10).forEach(([k, v]) => rows.push({ label: "stage " + k, value: v, color: "#ff7f0e" }));
  let items = barList(fig, rows.filter((r) => isNum(r.value)), whole, "GPU-s");
  if (Array.isArray(lost.top_ranks) && lost.top_ranks.length) {
    items += table(fig, ["rank", "host", "GPU", "GPU-seconds lost", "share"], lost.top_ranks.map((r) =>
      [r.rank, r.host || "-", isNum(r.gpu) ? r.gpu : "-", fmt(r.gpu_seconds), isNum(r.share) ? (100 * r.share).toFixed(1) + "%" : "-"]));
  }
  return items;
}

function drawHeatmap(fig) {
  const h = HISTORY && HISTORY.heatmap;
  if (!h || !h.rows || !(h.values || []).some((v) => v)) return noData(fig, "no per-rank S_w in this report");
  const per = h.ranks_per_row || 1;
  const labels = [];
  for (let r = 0; r < h.rows; ++r) {
    if (Array.isArray(h.row_labels) && r < h.row_labels.length) { labels.push(String(h.row_labels[r])); continue; }
    if (per > 1) { labels.push(`ranks ${r * per}-${Math.min(h.ranks, (r + 1) * per) - 1}`); continue; }
    const p = rankPlace(r);
    labels.push(p.host === "-" ? `rank ${r}` : `rank ${r} ${p.host}` + (p.gpu === "-" ? "" : ` gpu ${p.gpu}`));
  }
  // Full colour from S_w 1.1 up at least: a rank 10% slow is worth a look, 2% of jitter is not.
  return heatmap(fig, h.values, labels, columnLabels(), 1, 0.1);
}

function drawAlarms(fig) {
  const alarms = REPORT.alarms;
  if (!Array.isArray(alarms)) return noData(fig, note("alarms") || "no alarm list in this report");
  if (!alarms.length) return noData(fig, "no alarm was raised");
  return table(fig, ["target", "cause", "raised at step", "cleared at step", "evidence since", "named on", "score", "p"],
    alarms.map((a) => [a.target || "(job)", a.cause, a.raised_step, isNum(a.cleared_step) ? a.cleared_step : "still raised",
                       a.since, `${a.steps} of ${a.of} steps`, fmt(isNum(a.S_w) ? a.S_w : a.S), fmt(a.p, 2)]));
}

function meanRowS(rank) {
  const h = HISTORY && HISTORY.heatmap;
  if (!h || (h.ranks_per_row || 1) !== 1) return null;
  const vs = (h.values || []).map((c) => c && c[rank]).filter(isNum);
  return vs.length ? vs.reduce((a, b) => a + b, 0) / vs.length : null;
}

function drawWorst(fig) {
  const worst = sortedEntries(REPORT.worst, 10);
  if (note("worst_ranks")) fig.appendChild(el("p", { class: "caption" }, note("worst_ranks")));
  if (!worst.length) return noData(fig, "no step named a worst rank or stage");
  return table(fig, ["worst", "steps named", "host", "GPU", "mean S_w"], worst.map(([target, n]) => {
    const m = /^rank:(\d+)$/.exec(target);
    if (!m) return [target, n, "-", "-", "-"];
    const p = rankPlace(Number(m[1]));
    return [target, n, p.host, p.gpu, fmt(meanRowS(Number(m[1])))];
  }));
}

function render() {
  headline();
  const per = HISTORY && HISTORY.steps_per_column > 1 ? ` Each point covers ${HISTORY.steps_per_column} steps (their mean).` : "";
  draw("slowdown", "S over steps", "Slowdown S = replayed step time / straggler-free ideal; red lines: alarms raised, green: cleared." + per, drawSlowdown);
  draw("step_times", "Step time and ideal over steps", "The measured step and the what-if ideal (every op at its ideal duration)." + per, drawTimes);
  draw("causes", "Causes over steps", (HISTORY && HISTORY.causes_title) || "The cause named for each step (stacked: steps per cause).", drawCauses);
  draw("ledger", "The ledger: GPU time lost", "(real - ideal) x GPUs, summed over the analysed steps, by cause, host and stage.", drawLedger);
  draw("worker_heatmap", "Worker heatmap over time", "S_w of every rank (rows) over steps (columns): the slowdown left when only that rank is real." + per, drawHeatmap);
  draw("alarms", "Alarms", "The same rank, stage or cause significant over recent steps.", drawAlarms);
  draw("worst_ranks", "Worst ranks: host and GPU", "Who was named worst, on how many steps, and where it runs.", drawWorst);
  document.body.setAttribute("data-rendered", "yes");
}

render();
