"""Starts a framework job the way its users do and collects what it left (harness.JobResult).

- "torchrun": `python -m torch.distributed.run --standalone --nproc-per-node N script spec`
  (every rank gets RANK, WORLD_SIZE, LOCAL_RANK from torchrun's agent);
- "lightning": `python script spec` once; Lightning's launcher starts the other ranks itself;
- "accelerate": `accelerate launch --multi_gpu --num_processes N script spec` (on CPUs accelerate
  runs torchrun and trains MULTI_CPU over gloo);
- "deepspeed": `deepspeed --num_gpus N --no_local_rank script spec` (one node: no ssh or pdsh;
  on CPUs DS_ACCELERATOR=cpu, and DeepSpeed's CPU accelerator uses gloo without oneCCL).
mode="preload" adds LD_PRELOAD=libstraggler_probe.so (the script never imports the package; the
library's autoload starts it when the script initialises torch.distributed).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import harness  # noqa: E402


def preload_library() -> str | None:
    explicit = os.environ.get("SP_PRELOAD_LIB")
    if explicit:
        return explicit
    pkg = harness.package_path()
    lib = Path(pkg).parent / "runtime" / "libstraggler_probe.so" if pkg else None
    return str(lib) if lib is not None and lib.exists() else None


def run(script: str, spec: dict, out_dir: Path, launch: str = "torchrun", world: int = 4,
        timeout: float = 300.0, env: dict | None = None) -> harness.JobResult:
    out_dir.mkdir(parents=True, exist_ok=True)
    spec = dict(spec, out=str(out_dir), world=world)
    report = str(out_dir / "report")
    spec.setdefault("probe", {}).setdefault("out_dir", report)
    penv = {k: v for k, v in os.environ.items()
            if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    path = [str(HERE), str(HERE.parent)] + ([harness.package_path()] if harness.package_path() else [])
    penv.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", STRAGGLER_PROBE_OUT_DIR=report,
                PYTHONPATH=os.pathsep.join(path + [penv.get("PYTHONPATH", "")]),
                # quiet frameworks: no telemetry, no tokenizer threads, no hub lookups
                HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
                PL_DISABLE_FORK="1", TRANSFORMERS_NO_ADVISORY_WARNINGS="1")
    if spec.get("mode") == "preload":
        lib = preload_library()
        if lib is None:
            raise RuntimeError("libstraggler_probe.so is not built next to the package")
        penv["LD_PRELOAD"] = lib
    penv.update(env or {})
    cmd = [sys.executable, str(HERE / script), json.dumps(spec)]
    if launch == "torchrun":
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc-per-node={world}", "--monitor-interval=0.5"] + cmd[1:]
    elif launch == "accelerate":
        cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu",
               f"--num_processes={world}", "--num_machines=1", "--mixed_precision=no",
               "--dynamo_backend=no", f"--main_process_port={harness.free_port()}",
               "--monitor_interval=0.5"] + cmd[1:]
    elif launch == "deepspeed":
        penv.setdefault("DS_ACCELERATOR", "cpu")
        cmd = [sys.executable, "-m", "deepspeed.launcher.runner", f"--num_gpus={world}",
               f"--master_port={harness.free_port()}", "--no_local_rank"] + cmd[1:]
    elif launch == "lightning":
        penv.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(harness.free_port()))
    proc = subprocess.Popen(cmd, env=penv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=str(out_dir))
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        err += f"\n[launch] killed after {timeout}s"
    ranks, steps = harness.collect(out_dir, world)
    # one process holds every rank's output (torchrun's agent, Lightning's first process)
    return harness.JobResult([proc.returncode] * world, [out] + [""] * (world - 1),
                             [err] + [""] * (world - 1), ranks, steps, out_dir)


def named_share(result: harness.JobResult, culprit: str, cause: str = "worker",
                first_step: int = 10) -> tuple[float, list]:
    """Share of analysed steps >= first_step whose verdict names the culprit with the cause."""
    steps = [s for s in result.steps if s.get("analyzed") and s["step"] >= first_step]
    named = [s for s in steps if s["cause"] == cause and s["worst"] == culprit]
    table = [(s["step"], s["cause"], s["worst"], round(s["S"], 3)) for s in steps]
    return (len(named) / len(steps) if steps else 0.0), table
