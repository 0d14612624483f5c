"""One process, gloo, world size 1: a DDP model trained a few steps under straggler_probe, and
what its comm hook state was before the probe saw it, after the training steps and after
straggler_probe.shutdown(). Prints one JSON line. Run by test_ddp_untouched.py with the probe's
keywords as its argument (JSON)."""
from __future__ import annotations

import json
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.nn as nn


def hook_state(ddp: nn.parallel.DistributedDataParallel) -> dict:
    register = nn.parallel.DistributedDataParallel.register_comm_hook
    return {"comm_hooks": [repr(h) for h in getattr(ddp, "_comm_hooks", [])],
            "register_is_torch": register.__module__ == "torch.nn.parallel.distributed"
            and not hasattr(register, "__wrapped__")}


def main() -> None:
    import straggler_probe

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(s.getsockname()[1]))
    torch.set_num_threads(1)
    straggler_probe.init(log_lines=False, **json.loads(sys.argv[1]))
    dist.init_process_group("gloo", rank=0, world_size=1)
    model = nn.Sequential(*[nn.Linear(32, 32) for _ in range(6)])
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.005)  # 4 KB: a few buckets
    before = hook_state(ddp)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    for _ in range(6):
        ddp(torch.randn(4, 32)).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    after_steps = hook_state(ddp)
    stats = straggler_probe.stats()
    straggler_probe.shutdown()
    after_shutdown = hook_state(ddp)
    # DDP keeps working after the probe left (a hook of ours would still be called)
    ddp(torch.randn(4, 32)).pow(2).mean().backward()
    print(json.dumps({"before": before, "after_steps": after_steps,
                      "after_shutdown": after_shutdown, "ddp": stats.get("ddp"),
                      "process_groups": stats.get("process_groups"),
                      "buckets": len(ddp.reducer._get_zeros_like_grad_buckets())
                      if hasattr(ddp.reducer, "_get_zeros_like_grad_buckets") else None}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
