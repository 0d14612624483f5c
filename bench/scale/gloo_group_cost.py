"""What a dedicated gloo group for the summaries would cost (bench/README.md, "transport design"):
N processes on this machine create a gloo process group (what `new_group(backend="gloo")` at
start-up does: every rank connects to every other), then gather a 1 KB tensor per rank to rank 0
per "step". Prints one JSON line per N: group creation time, sockets per rank, gather time.

    .venv/bin/python bench/scale/gloo_group_cost.py 8 16 32
"""
from __future__ import annotations

import json
import os
import socket
import statistics
import sys
import time


def sockets_open() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                n += 1
        except OSError:
            pass
    return n


def worker(rank: int, world: int, port: int, out) -> None:
    import torch
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    before = sockets_open()
    t = time.perf_counter()
    dist.init_process_group("gloo", rank=rank, world_size=world)
    dist.barrier()  # every pair connected (gloo connects its full mesh when the group is made)
    created = time.perf_counter() - t
    sockets = sockets_open() - before
    payload = torch.zeros(256, dtype=torch.int32)  # 1 KB: one rank's summary
    gathered = [torch.zeros_like(payload) for _ in range(world)] if rank == 0 else None
    times = []
    for _ in range(20):
        dist.barrier()
        t = time.perf_counter()
        dist.gather(payload, gathered, dst=0)
        times.append(time.perf_counter() - t)
    if rank == 0:
        out.put({"ranks": world, "group_create_s": round(created, 3),
                 "sockets_per_rank": sockets,
                 "gather_1kb_ms_median": round(1e3 * statistics.median(times), 3)})
    dist.destroy_process_group()


def measure(world: int) -> dict:
    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, world, port, out)) for r in range(world)]
    for p in procs:
        p.start()
    result = out.get(timeout=600)
    for p in procs:
        p.join(timeout=120)
    return result


if __name__ == "__main__":
    for n in [int(a) for a in sys.argv[1:]] or [8, 16, 32]:
        print(json.dumps(measure(n)), flush=True)
