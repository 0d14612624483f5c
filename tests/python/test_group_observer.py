"""A process group's collectives observed by C++ hooks (straggler_probe._c10d.GroupObserver,
python/src/c10d/group_observer.h): torch's ProcessGroup pre/post hooks in C++, each op recorded into
the runtime from C++ when it ends, with no Python on the way. One real gloo process group; the
by-name wrappers (dist.all_reduce) leave such a group's collectives to the hooks (recorded once,
numbered by one counter), and still record sends and receives; a futureless op ends at its wait;
shutdown() takes the hooks off the group."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import harness
import pytest

JOB = textwrap.dedent("""
    import json, os, socket, sys, time
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(s.getsockname()[1]),
                          RANK="0", WORLD_SIZE="1")
    import torch, torch.distributed as dist, straggler_probe as sp
    sp.init(out_dir=sys.argv[1], warmup_steps=1)
    dist.init_process_group("gloo")
    pg = dist.group.WORLD
    t = torch.ones(1024)
    out, inp = torch.empty(256), torch.ones(256)
    STEPS = 8
    THREAD_OPS = 9000  # past the open-op table's 8192
    sp.step()                      # the group is found at a step boundary (it came after init)
    for step in range(STEPS):
        unwaited = pg.allreduce([t])                       # C++ hooks: ended by its future
        dist.all_reduce(t)                                 # the wrapper leaves it to C++
        pg.reduce_scatter([out], [[inp]]).wait()           # gloo: no future, ended at the wait
        time.sleep(0.01)
        sp.step()
    # ops from another thread, with no step boundary to look at them: the table stays bounded
    import threading
    from straggler_probe import _c10d
    futures = []
    def issue_many():
        for _ in range(THREAD_OPS):
            futures.append(pg.allreduce([t]).get_future())
    worker = threading.Thread(target=issue_many)
    worker.start(); worker.join()
    open_after_thread = _c10d.open_ops()
    torch.futures.wait_all(futures)
    # c10's Future wakes its waiters before it runs its callbacks (ours record the ops)
    deadline = time.time() + 10
    while time.time() < deadline:
        stats = sp.stats()["process_groups"]
        if stats["cpp_future_ends"] + stats["ended_unwaited"] >= 2 * STEPS + THREAD_OPS:
            break
        time.sleep(0.05)
    stats["open_after_thread"] = open_after_thread
    groups = sp._probe.collectives.groups
    info = groups.info(pg)
    observer = info.observer
    stats["coll_seq"] = observer.coll_seq if observer is not None else None
    stats["numbered"] = groups.ops_numbered()
    seen_at_shutdown = observer.seen if observer is not None else 0
    sp.shutdown()
    pg.allreduce([t]).wait()       # after shutdown: no hook of ours sees it
    stats["seen_after_shutdown"] = (observer.seen if observer is not None else 0) - seen_at_shutdown
    print(json.dumps(stats))
    dist.destroy_process_group()
""")


def _observes_groups() -> bool:
    code = "import torch, straggler_probe._c10d as m; print(getattr(m, 'observes_groups', False))"
    env = dict(os.environ, PYTHONPATH=harness.package_path() or "")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)
    return proc.stdout.strip() == "True"


THREAD_OPS = 9000  # the JOB's


@pytest.mark.skipif(not _observes_groups(),
                    reason="straggler_probe._c10d not built against a torch with C++ group hooks")
def test_collectives_are_recorded_by_cpp_hooks(tmp_path):
    env = dict(os.environ, PYTHONPATH=harness.package_path() or "")
    proc = subprocess.run([sys.executable, "-c", JOB, str(tmp_path)], capture_output=True,
                          text=True, env=env, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "straggler_probe" not in proc.stderr, proc.stderr[-3000:]  # no warning of ours
    pg = json.loads(proc.stdout.strip().splitlines()[-1])
    steps = 8
    assert pg["mode"] == "hooks" and pg["observed_in_cpp"] == 1, pg
    ops = 3 * steps + THREAD_OPS
    # the hooks see and record all three ops a step, the wrapper's too, and the thread's
    assert pg["seen"] >= ops and pg["recorded"] == ops, pg
    # each ended once: by its future, or (the thread's, past the table's bound) given up
    assert pg["cpp_future_ends"] + pg["ended_unwaited"] == ops - steps, pg
    assert pg["cpp_waited_ends"] == steps, pg
    assert pg["open_after_thread"] <= 8192, pg
    assert pg["stamped_ends"] == 0 and pg["polled_ends"] == 0 and pg["unseen"] == 0, pg
    # one counter numbers the group's collectives: each op once
    assert pg["coll_seq"] == ops and pg["numbered"] == ops, pg
    assert pg["seen_after_shutdown"] == 0, "shutdown() must take the hooks off the group"
    lines = (tmp_path / "straggler_probe_steps.jsonl").read_text().splitlines()
    analysed = [s for s in map(json.loads, lines) if s.get("event") == "step" and s.get("analyzed")]
    assert len(analysed) >= 4, lines
    assert all(s["top_op"] != "-" for s in analysed), analysed
