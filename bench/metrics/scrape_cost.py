"""What rank 0's metrics server costs (rank_pipeline/src/http/), in CPU time of its own thread.

One process trains a small model (1 rank, the probe with metrics_port set) on its main thread
while a thread of this script measures the server thread `sp_metrics` by its
/proc/self/task/<tid>/schedstat (ns on CPU): idle for --idle-s seconds (it wakes 5 times a
second to see a stop), then --scrapes GET /metrics, then as many GET /status. CPU time, not wall
time: the figures hold on a loaded machine (the wall-clock step_cost bench does not).

Usage: STRAGGLER_PROBE_PYTHONPATH=build/python .venv/bin/python bench/metrics/scrape_cost.py
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, os.environ.get("STRAGGLER_PROBE_PYTHONPATH") or str(REPO / "build" / "python"))


def thread_cpu_ns(name: str) -> int:
    for task in Path("/proc/self/task").iterdir():
        if (task / "comm").read_text().strip() == name:
            return int((task / "schedstat").read_text().split()[0])
    raise RuntimeError(f"no thread named {name}")


def measure(port: int, args: argparse.Namespace, rows: list, stop: threading.Event) -> None:
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the server starts with the pipeline (first steps)
            try:
                thread_cpu_ns("sp_metrics")
                break
            except RuntimeError:
                time.sleep(0.2)
        time.sleep(2.0)  # steps analysed: the board has verdicts
        c0 = thread_cpu_ns("sp_metrics")
        time.sleep(args.idle_s)
        idle = thread_cpu_ns("sp_metrics") - c0
        rows.append(("idle (per second)", idle / args.idle_s / 1e3, 0))
        for path in ("/metrics", "/status"):
            size = 0
            c0 = thread_cpu_ns("sp_metrics")
            t0 = time.monotonic()
            for _ in range(args.scrapes):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
                    size = len(r.read())
            spent = thread_cpu_ns("sp_metrics") - c0 - idle / args.idle_s * (time.monotonic() - t0)
            rows.append((f"GET {path} (per request)", spent / args.scrapes / 1e3, size))
    finally:
        stop.set()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--idle-s", type=float, default=10.0)
    ap.add_argument("--scrapes", type=int, default=500)
    args = ap.parse_args()
    import torch
    import straggler_probe as sp
    torch.set_num_threads(1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tempfile.mkdtemp(prefix="sp-scrape-cost-")
    assert sp.init(out_dir=out, metrics_port=port, warmup_steps=1, log_lines=False)
    stop = threading.Event()
    rows: list = []
    meter = threading.Thread(target=measure, args=(port, args, rows, stop), daemon=True)
    meter.start()
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    while not stop.is_set():
        model(torch.randn(8, 64)).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
        time.sleep(0.01)
    meter.join()
    steps = sp.stats()["step"]
    sp.shutdown()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
          f"{steps} training steps meanwhile")
    print("| what | sp_metrics CPU (us) | reply bytes |\n| --- | ---: | ---: |")
    for what, us, size in rows:
        print(f"| {what} | {us:.1f} | {size} |")


if __name__ == "__main__":
    main()
