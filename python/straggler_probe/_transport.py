"""Starting the background pipeline: which store the summaries travel through.

Preferred: the job's own c10d store driven from C++ (straggler_probe._c10d hands the
c10d::Store to the transport thread; no GIL involved). Fallback: the same store driven from the
transport thread through Python (it takes the GIL per store call; torch's store methods release
it while waiting on the network). A single-rank job needs no store at all.

Either way the same store also carries the clock-offset estimation (rank_pipeline/src/clock/clock_sync.h):
each rank's offset to rank 0, at start and every clock_sync_period seconds, applied to the
rank's summaries (sp_set_clock_offset) and reported by rank 0.

Over the store, the ranks of each host send through one of them, the host's leader, one message
per host and step (rank_pipeline/README.md); each rank's host name, local rank and device go to
rank 0 once, for verdicts that name a host and a GPU. Environment only (tests and odd clusters):
STRAGGLER_PROBE_HOSTNAME replaces the host name ranks are grouped and named by;
STRAGGLER_PROBE_TRANSPORT_PROTOCOL=rank forces the per-rank protocol (the fallback for a store
without append / compare_set), host the host-aggregated one (default auto).
"""
from __future__ import annotations

import dataclasses
import json
import os
import warnings
from typing import Any

from ._config import Config


def default_store(dist: Any) -> Any:
    """The default process group's store, across torch versions (feature-detected)."""
    c10d = dist.distributed_c10d
    getter = getattr(c10d, "_get_default_store", None)
    if getter is not None:
        return getter()
    world = getattr(c10d, "_world", None)  # torch < 2.0 kept it here
    default_pg = c10d._get_default_group()
    return world.pg_map[default_pg][1]


def make_store(cfg: Config, dist: Any) -> tuple[Any, str]:
    """(store handle for _core.start_pipeline, how it is driven)."""
    store = default_store(dist)
    if cfg.transport in ("auto", "c10d"):
        try:
            from . import _c10d  # type: ignore[attr-defined]
            return _c10d.wrap_store(store), "c10d"
        except Exception as err:  # noqa: BLE001 - ImportError, or a torch whose ABI differs
            if cfg.transport == "c10d":
                raise RuntimeError("STRAGGLER_PROBE_TRANSPORT=c10d but the C++ store bridge is "
                                   f"unusable ({type(err).__name__}: {err})") from None
            warnings.warn("straggler_probe: the C++ store bridge is unusable "
                          f"({type(err).__name__}: {err}); summaries go through a Python thread",
                          RuntimeWarning, stacklevel=3)
    return store, "python"


def _int_env(name: str) -> int:
    try:
        return int(os.environ.get(name, "-1"))
    except ValueError:
        return -1


def identity() -> dict:
    """This rank's row of the rank table (host name override, local rank, CUDA device), the
    ranks on its host (LOCAL_WORLD_SIZE, as torchrun sets it) and the protocol override."""
    device = -1
    try:
        import torch  # noqa: PLC0415 - only to ask which device this process trains on
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            device = int(torch.cuda.current_device())
    except Exception:  # noqa: BLE001 - no CUDA, or a broken one: no device
        device = -1
    protocol = os.environ.get("STRAGGLER_PROBE_TRANSPORT_PROTOCOL", "auto")
    if protocol not in ("auto", "host", "rank"):
        warnings.warn(f"straggler_probe: STRAGGLER_PROBE_TRANSPORT_PROTOCOL={protocol!r} is not "
                      "auto, host or rank; auto is used", RuntimeWarning, stacklevel=3)
        protocol = "auto"
    return dict(hostname=os.environ.get("STRAGGLER_PROBE_HOSTNAME", ""),
                local_rank=_int_env("LOCAL_RANK"), local_world_size=_int_env("LOCAL_WORLD_SIZE"),
                device=device, protocol=protocol)


def start(core: Any, cfg: Config, rank: int, world: int, dist: Any, session: int) -> str:
    """Starts the pipeline; returns a word saying how the summaries travel."""
    if cfg.transport == "none":
        core.start_pipeline(None, rank=rank, world_size=world, prefix="", max_lag=cfg.max_lag,
                            first_step=cfg.warmup_steps, step_timeout_s=cfg.step_timeout,
                            analysis_timeout_s=cfg.analysis_timeout, out_dir="", log_lines=False,
                            fault="none", discard=True)
        return "none"
    if world > 1:
        store, how = make_store(cfg, dist)
    else:
        store, how = None, "local"
    core.start_pipeline(store, rank=rank, world_size=world,
                        prefix=f"straggler_probe/{session}/", max_lag=cfg.max_lag,
                        first_step=cfg.warmup_steps,
                        step_timeout_s=cfg.step_timeout, analysis_timeout_s=cfg.analysis_timeout,
                        out_dir=cfg.out_dir, log_lines=cfg.log_lines, fault=cfg.fault_inject,
                        clock_sync=cfg.clock_sync, clock_sync_period_s=cfg.clock_sync_period,
                        slowdown_threshold=cfg.slowdown_threshold, significance=cfg.significance,
                        alarm_significance=cfg.alarm_significance, window_steps=cfg.window_steps,
                        summary_interval=cfg.summary_interval, hang_after_s=cfg.hang_after_s,
                        hang_multiple=cfg.hang_multiple, timeline_ranks=cfg.timeline_ranks or 0,
                        **identity(), **metrics_settings(cfg))
    return how


def job_id(environ: Any = None) -> str:
    """The launcher's job id, the `job` label of rank 0's metrics: Slurm's, else torchrun's."""
    environ = os.environ if environ is None else environ
    return environ.get("SLURM_JOB_ID") or environ.get("TORCHELASTIC_RUN_ID") or ""


def metrics_settings(cfg: Config) -> dict:
    """Rank 0's metrics server, /status and /control (the C++ server in rank_pipeline/src/http:
    its thread never takes the GIL). /status shows the settings, never the control token."""
    shown = {k: v for k, v in dataclasses.asdict(cfg).items() if k != "control_token"}
    shown["control"] = "on" if cfg.control_token else "off"
    return dict(metrics_port=cfg.metrics_port, metrics_addr=cfg.metrics_addr,
                metrics_file=cfg.metrics_file or "", control_token=cfg.control_token or "",
                job=job_id(), config_json=json.dumps(shown, default=str))
