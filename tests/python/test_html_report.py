"""report.html (issue 25) opened in a real headless Chromium (html_report_check.py): every plot
drawn, nothing on the console, a screenshot that is not blank; from a live 4-rank gloo job with a
slow rank (conftest's straggler_run), from `straggler-probe analyze-dir` on recorded summaries of
such a job, and from `straggler-probe analyze` on the reference traces. Names from a trace are
untrusted: a trial name made of markup shows as text and runs nothing.

Needs Debian's chromium (scripts/setup.sh) and, for the CLI cases, the built straggler-probe
(STRAGGLER_PROBE_CLI, set by scripts/test.sh).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest

import harness
import html_report_check as check

DATA = harness.REPO / "tests" / "data"


def cli() -> str:
    path = os.environ.get("STRAGGLER_PROBE_CLI") or shutil.which("straggler-probe")
    if not path:
        pytest.skip("the straggler-probe binary is not built (set STRAGGLER_PROBE_CLI)")
    return path


def embedded(page: Path) -> dict:
    """The data report.html carries (its <script type="application/json">)."""
    m = re.search(r'<script type="application/json" id="sp-data">(.*?)</script>', page.read_text(), re.S)
    assert m, "no embedded data"
    return json.loads(m.group(1))


def must_draw(report: dict) -> set[str]:
    """Every plot, except the alarms when none was raised and the ledger when the report has none."""
    plots = set(check.PLOTS)
    if not report.get("alarms"):
        plots.discard("alarms")
    if "lost" not in report:
        plots.discard("ledger")
    return plots


def test_live_run_report_html_draws_every_plot(straggler_run, tmp_path):
    out = straggler_run.out_dir / "report"
    report = json.loads((out / "report.json").read_text())
    page = out / "report.html"
    # Written with report.json, the same run covered (both final, the same last step).
    data = embedded(page)
    assert data["report"]["run"] == report["run"]
    assert report["alarms"], "the slow rank raised no alarm"
    result = check.check(page, tmp_path / "live.png", must_draw(report))
    # The heatmap has every rank over the steps, not only the mean, and names the slow one's host.
    heat = data["history"]["heatmap"]
    assert heat["rows"] == 4 and len(heat["values"]) >= report["steps_analyzed"] // 2
    # Medians over the steps: a step where the shared machine stalls every rank is not the point.
    rows = [statistics.median(col[r] for col in heat["values"] if col) for r in range(4)]
    assert rows[2] > max(rows[:2] + rows[3:]) + 0.1, rows  # rank 2 computes 1.3x slower
    host = next(r["host"] for r in report["ranks"] if r["rank"] == 2)
    assert "rank:2" in result["text"] and host in result["text"]


def test_analyze_dir_report_html_draws_every_plot(tmp_path):
    out = tmp_path / "report"
    run = subprocess.run([cli(), "analyze-dir", str(DATA / "online_jobs" / "dp-slow-rank"), "--out", str(out),
                          "--quiet"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    report = json.loads((out / "report.json").read_text())
    assert embedded(out / "report.html")["report"]["run"] == report["run"]
    check.check(out / "report.html", tmp_path / "analyze_dir.png", must_draw(report))


@pytest.mark.parametrize("trace", ["ST", "SE"])
def test_analyze_report_html_draws_every_plot(trace, tmp_path):
    out = tmp_path / trace
    run = subprocess.run([cli(), "analyze", "--trace", str(DATA / trace / "trace.csv.gz"), "--meta",
                          str(DATA / trace / "meta.yaml"), "--out", str(out)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    result = check.check(out / "report.html", tmp_path / f"{trace}.png", set(check.PLOTS) - {"alarms"})
    # The offline engine raises no alarms, and the page says so rather than draw an empty table.
    assert "offline analysis raises no alarms" in result["figures"]["alarms"]["data-empty"]
    offline = embedded(out / "report.html")
    analysed = json.loads((out / "result.json").read_text())
    assert offline["report"]["steps_analyzed"] > 0
    assert sum(offline["history"]["columns"]["analyzed"]) == offline["report"]["steps_analyzed"]
    assert offline["report"]["mean_S"] == pytest.approx(analysed["blocking_slowdown"], rel=1e-12)
    steps = offline["history"]["columns"]["S"]
    assert steps == pytest.approx([round(v, 4) for _, v in sorted((int(k), v) for k, v in
                                                                   analysed["blocking_step_slowdown"].items())], abs=1e-4)


def test_names_from_a_trace_show_as_text_and_run_nothing(tmp_path):
    payload = "</script><script>document.body.setAttribute('data-pwned','1')</script><img src=x onerror=alert(1)>&amp;"
    meta = (DATA / "ST" / "meta.yaml").read_text().replace("trial_name: ST", "trial_name: " + json.dumps(payload))
    (tmp_path / "meta.yaml").write_text(meta)
    out = tmp_path / "out"
    run = subprocess.run([cli(), "analyze", "--trace", str(DATA / "ST" / "trace.csv.gz"), "--meta",
                          str(tmp_path / "meta.yaml"), "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    # check() fails on any console line: the <img>'s refused load or an alert would be one.
    result = check.check(out / "report.html", tmp_path / "hostile.png", set(check.PLOTS) - {"alarms"})
    assert payload in result["text"]  # shown whole, as text
    assert "data-pwned" not in result["body"] and "img" not in result["tags"]
