"""One rank of workload.py's data-parallel job with a fault at a chosen step, for the hang and
fault tests (test_hang.py, test_faults_around.py). Spec keys besides workload.py's:

  fault_at      the step at which the fault happens
  fault         "freeze" (the victim stops itself with SIGSTOP; a helper sends SIGCONT after
                freeze_s), "freeze_in_collective" (the victim starts an all-reduce and freezes as
                above while it is in flight, the others enter it 0.5 s later and wait in it), "kill" (the victim
                ends itself with SIGKILL), "store" (rank 0 asks
                the separate store process of test_faults_around.py to end itself)
  victim        a rank, or "leader": the rank that leads its host in the probe's transport
  rank0_late    seconds rank 0 waits before straggler_probe.init() (the others start their
                transport first, so one of them leads the host)

The probe starts after the process group (its transport at once). Writes <out>/rank<r>.json as
workload.py does, with the final loss.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import torch
import torch.distributed as dist

import workload


def is_victim(spec: dict, rank: int) -> bool:
    victim = spec.get("victim")
    if victim == "leader":
        import straggler_probe
        return straggler_probe.stats().get("pipeline", {}).get("host_members", 0) >= 1
    return victim == rank


def at_step(spec: dict, rank: int, step: int) -> None:
    if step != spec.get("fault_at", -1):
        return
    fault = spec.get("fault")
    if fault == "store":
        if rank == 0:  # in the store itself, not under the process group's prefixes
            store = dist.distributed_c10d._get_default_store()
            while hasattr(store, "underlying_store"):
                store = store.underlying_store
            store.set("fault_job/end_store", "1")
        return
    work = None
    if fault == "freeze_in_collective":
        # the victim starts it and stops; the others enter it after (a small all-reduce entered by
        # all at once would be over before the victim's SIGSTOP) and wait in it for the victim
        if not is_victim(spec, rank):
            time.sleep(0.5)
        work = dist.all_reduce(torch.ones(1), async_op=True)
    if not is_victim(spec, rank):
        if work is not None:
            work.wait()
        return
    with open(os.path.join(spec["out"], f"victim{rank}.json"), "w") as f:
        json.dump({"rank": rank, "fault": fault, "t": time.time()}, f)
    if fault in ("freeze", "freeze_in_collective"):
        # whoever wakes us must not be frozen with us: its own session; and no preloaded probe
        # (a preloaded recorder would open this rank's files again)
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        subprocess.Popen(["sh", "-c", f"sleep {spec['freeze_s']}; kill -CONT {os.getpid()}"],
                         start_new_session=True, env=env)
        os.kill(os.getpid(), signal.SIGSTOP)
        if work is not None:
            work.wait()
    elif fault == "kill":
        os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    spec = json.loads(sys.argv[1])
    import straggler_probe

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    if rank == 0 and spec.get("rank0_late"):
        time.sleep(spec["rank0_late"])
    straggler_probe.init(**spec.get("probe", {}))
    workload.STEP_HOOKS.append(lambda step: at_step(spec, rank, step))
    step_times = workload.run_data_parallel(spec, rank, world)
    transport = straggler_probe.stats().get("transport")
    straggler_probe.shutdown()
    result = {"rank": rank, "step_times": step_times, "stats": straggler_probe.stats(),
              "transport": transport, "loss": spec.get("final_loss")}
    with open(os.path.join(spec["out"], f"rank{rank}.json"), "w") as f:
        json.dump(result, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
