"""straggler_probe demo: a small GPT trained with DDP on 4 CPU ranks (gloo), one of them a
straggler. Rank 0 prints straggler_probe's line for every step, then where the report is.

Each rank's forward/backward is the GPT's real CPU compute plus an emulated accelerator's time
(examples/straggler.py says why); the slow rank takes --slowdown longer for all of it.

    torchrun --standalone --nproc_per_node 4 examples/gpt_demo.py [--slow-rank 2] [--slowdown 0.3]

or without torchrun: python examples/gpt_demo.py --spawn 4
"""
from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import straggler  # noqa: E402
from tiny_gpt import SyntheticTokens, TinyGPT  # noqa: E402

import straggler_probe  # noqa: E402


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--slow-rank", type=int, default=2, help="-1: no straggler")
    p.add_argument("--slowdown", type=float, default=0.3, help="extra compute on the slow rank")
    p.add_argument("--device-ms", type=float, default=15.0,
                   help="emulated accelerator time per micro-batch forward (backward: 2x); "
                        "see examples/straggler.py")
    p.add_argument("--busy", action="store_true",
                   help="the slow rank's extra time is CPU work (slows the others on few cores)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--out", default="straggler_probe_out")
    p.add_argument("--spawn", type=int, default=0, help="start this many ranks (no torchrun)")
    return p.parse_args()


def train(args: argparse.Namespace) -> None:
    # No change to the training code is needed beyond this one call.
    straggler_probe.init(out_dir=args.out)
    torch.set_num_threads(1)  # 4 ranks share the machine's cores
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    rank_time = straggler.RankTime(args.device_ms, args.slowdown if rank == args.slow_rank else 0.0)
    model = torch.nn.parallel.DistributedDataParallel(straggler.OnDevice(TinyGPT(), rank_time))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    data = torch.utils.data.DataLoader(SyntheticTokens(256, 64, seed=rank), batch_size=args.batch,
                                       shuffle=True, drop_last=True)
    straggler.BUSY = args.busy
    if rank == 0:
        print(f"demo: {dist.get_world_size()} ranks, {args.steps} steps, "
              + (f"rank {args.slow_rank} {args.slowdown:.0%} slower" if args.slow_rank >= 0
                 else "no straggler"), flush=True)
    for _, (x, y) in zip(range(args.steps), straggler.endless(data)):
        loss = straggler.train_step(model, opt, rank_time, x, y)
    if rank == 0:
        print(f"demo: final loss {loss.item():.3f}", flush=True)
    straggler_probe.shutdown()  # (also at exit) rank 0 prints the report's paths
    dist.destroy_process_group()


def spawn(args: argparse.Namespace) -> None:
    import socket
    import subprocess
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [a for a in sys.argv[1:]]
    i = argv.index("--spawn")
    del argv[i:i + 2]
    procs = []
    for rank in range(args.spawn):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(args.spawn), LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, __file__, *argv], env=env))
    sys.exit(max(p.wait() for p in procs))


if __name__ == "__main__":
    a = parse_args()
    spawn(a) if a.spawn else train(a)
