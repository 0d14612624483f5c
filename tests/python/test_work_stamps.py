"""A work's end stamped in C++ (straggler_probe._c10d.stamp_completion, python/src/c10d/work_stamp.h):
no Python callback on the backend's thread. The stamp is the future's completion, between the
op's issue and the return of a wait on it; the probe records async collectives by it, waited or
not, in the step they ran in."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import harness
import pytest

PRELUDE = textwrap.dedent("""
    import json, os, socket, sys, time
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(s.getsockname()[1]),
                          RANK="0", WORLD_SIZE="1")
""")

STAMP = PRELUDE + textwrap.dedent("""
    import torch, torch.distributed as dist
    from straggler_probe import _c10d
    dist.init_process_group("gloo")
    t = torch.ones(1)
    issued = time.time_ns()
    work = dist.all_reduce(t, async_op=True)
    stamp = _c10d.stamp_completion(work)
    work.wait()
    waited = time.time_ns()
    try:
        _c10d.stamp_completion(object())
        bad = "accepted"
    except Exception as err:
        bad = type(err).__name__
    print(json.dumps({"issued": issued, "end": stamp.end_ns, "waited": waited, "bad": bad}))
    dist.destroy_process_group()
""")

JOB = PRELUDE + textwrap.dedent("""
    import torch, torch.distributed as dist, straggler_probe as sp
    sp.init(out_dir=sys.argv[1], warmup_steps=1)
    dist.init_process_group("gloo")
    t = torch.ones(1024)
    for step in range(8):
        works = [dist.all_reduce(t, async_op=True) for _ in range(3)]
        time.sleep(0.01)           # they complete; nobody waits for them
        sp.step()
    before = sp.stats()
    sp.shutdown()
    print(json.dumps(before))
    dist.destroy_process_group()
""")


def _run(script: str, *args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=harness.package_path() or "")
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                          env=env, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _has_bridge() -> bool:
    code = "import straggler_probe._c10d as m; print(hasattr(m, 'stamp_completion'))"
    env = dict(os.environ, PYTHONPATH=harness.package_path() or "")
    proc = subprocess.run([sys.executable, "-c", "import torch\n" + code], capture_output=True,
                          text=True, env=env, timeout=120)
    return proc.stdout.strip() == "True"


needs_bridge = pytest.mark.skipif(not _has_bridge(), reason="straggler_probe._c10d not built")


@needs_bridge
def test_the_stamp_is_the_ops_completion():
    got = _run(STAMP)
    assert got["issued"] <= got["end"] <= got["waited"], got
    assert got["bad"] != "accepted", "a non-Work object must be refused"


@needs_bridge
def test_unwaited_async_collectives_are_recorded_by_their_stamps(tmp_path):
    stats = _run(JOB, str(tmp_path))
    pg = stats["process_groups"]
    assert pg["work_end_stamps"] is True
    # 3 a step, none waited: each ended by its stamp at the next op or the step boundary, or,
    # where C++ hooks observe the group (test_group_observer.py), by a C++ callback
    assert pg["stamped_ends"] + pg["cpp_future_ends"] >= 3 * 7, pg
    assert pg["ended_unwaited"] == 0, pg
    steps = [json.loads(line) for line in (tmp_path / "straggler_probe_steps.jsonl").read_text().splitlines()]
    analysed = [s for s in steps if s.get("event") == "step" and s.get("analyzed")]
    assert len(analysed) >= 5, steps
    assert all(s["top_op"] != "-" for s in analysed), analysed
