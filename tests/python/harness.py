"""Launches a multi-process job of workload.py the way torchrun does (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT per process) and collects what rank 0 printed, every rank's result file
and the analysis' JSONL."""
from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def package_path() -> str | None:
    """Where the built package is: STRAGGLER_PROBE_PYTHONPATH, else build/python, else installed."""
    explicit = os.environ.get("STRAGGLER_PROBE_PYTHONPATH")
    if explicit:
        return explicit
    built = REPO / "build" / "python"
    return str(built) if (built / "straggler_probe").is_dir() else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclasses.dataclass
class JobResult:
    returncodes: list[int]
    stdout: list[str]
    stderr: list[str]
    ranks: list[dict]
    steps: list[dict]  # rank 0's JSONL, one verdict per line
    out_dir: Path

    @property
    def lines(self) -> list[str]:
        return [l for l in self.stdout[0].splitlines() if l.startswith("straggler_probe ")]

    def step_times(self, rank: int = 0) -> list[float]:
        return self.ranks[rank]["step_times"]

    def explain(self) -> str:
        parts = []
        for r, (out, err) in enumerate(zip(self.stdout, self.stderr)):
            parts.append(f"--- rank {r} rc={self.returncodes[r]} stdout:\n{out[-4000:]}\n"
                         f"--- rank {r} stderr:\n{err[-4000:]}")
        return "\n".join(parts)


def run_job(spec: dict, out_dir: Path, world: int = 4, env: dict | None = None,
            timeout: float = 240.0, per_rank=None, script: Path | None = None) -> JobResult:
    """per_rank(rank) -> (command prefix, extra environment), e.g. to start a rank in another
    network namespace (test_two_hosts.py). `script` (default workload.py) runs in every rank; it
    takes the spec as its argument and writes <out>/rank<r>.json."""
    out_dir.mkdir(parents=True, exist_ok=True)
    spec = dict(spec, out=str(out_dir))
    spec.setdefault("probe", {}).setdefault("out_dir", str(out_dir / "report"))
    base = dict(os.environ)
    base.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE=str(world),
                OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    path = [str(HERE)] + ([package_path()] if package_path() else [])
    base["PYTHONPATH"] = os.pathsep.join(path + [base.get("PYTHONPATH", "")])
    base.update(env or {})
    procs = []
    for rank in range(world):
        penv = dict(base, RANK=str(rank), LOCAL_RANK=str(rank))
        prefix, extra = per_rank(rank) if per_rank else ([], {})
        penv.update(extra)
        procs.append(subprocess.Popen(prefix + [sys.executable, str(script or HERE / "workload.py"), json.dumps(spec)],
                                      env=penv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, cwd=str(out_dir)))
    outs, errs, codes = [], [], []
    for p in procs:
        try:
            o, e = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            o, e = p.communicate()
            e += f"\n[harness] killed after {timeout}s"
        outs.append(o)
        errs.append(e)
        codes.append(p.returncode)
    ranks, steps = collect(out_dir, world)
    return JobResult(codes, outs, errs, ranks, steps, out_dir)


def collect(out_dir: Path, world: int) -> tuple[list[dict], list[dict]]:
    """Every rank's result file (empty for a rank that wrote none) and rank 0's JSONL."""
    ranks = []
    for rank in range(world):
        f = out_dir / f"rank{rank}.json"
        ranks.append(json.loads(f.read_text()) if f.exists() else {})
    steps = []
    jsonl = out_dir / "report" / "straggler_probe_steps.jsonl"
    if jsonl.exists():
        steps = [json.loads(l) for l in jsonl.read_text().splitlines() if l.strip()]
    return ranks, steps
