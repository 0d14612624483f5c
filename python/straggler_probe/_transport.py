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


def device() -> int:
    """The CUDA device this process trains on; -1: none (no CUDA, or not initialised)."""
    try:
        import torch  # noqa: PLC0415 - only to ask which device this process trains on
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            return int(torch.cuda.current_device())
    except Exception:  # noqa: BLE001 - no CUDA, or a broken one: no device
        pass
    return -1


def pipeline_settings(core: Any, cfg: Config, rank: int, world: int) -> Any:
    """_core.PipelineSettings from the resolved settings: every field named after a row of the
    settings table is copied by name (unset rows keep the struct's default, the table's own),
    then this rank's place."""
    settings = core.PipelineSettings()
    for name in core.PipelineSettings.SETTING_NAMES:
        value = getattr(cfg, name)
        if value is not None:
            setattr(settings, name, value)
    settings.rank, settings.world_size = rank, world
    settings.local_rank = _int_env("LOCAL_RANK")
    settings.local_world_size = _int_env("LOCAL_WORLD_SIZE")
    settings.device = device()
    return settings


def start(core: Any, cfg: Config, rank: int, world: int, dist: Any, session: int) -> str:
    """Starts the pipeline; returns a word saying how the summaries travel."""
    settings = pipeline_settings(core, cfg, rank, world)
    if cfg.transport == "none":
        # Record only: no store, no analysis, no files, no lines, no metrics server.
        settings.discard, settings.out_dir, settings.log_lines = True, "", False
        settings.fault_inject, settings.metrics_port, settings.metrics_file = "none", 0, ""
        core.start_pipeline(None, settings)
        return "none"
    if world > 1:
        store, how = make_store(cfg, dist)
    else:
        store, how = None, "local"
    settings.prefix = f"straggler_probe/{session}/"
    settings.job = job_id()
    settings.config_json = shown_config(cfg)
    core.start_pipeline(store, settings)
    return how


def job_id(environ: Any = None) -> str:
    """The launcher's job id, the `job` label of rank 0's metrics: Slurm's, else torchrun's."""
    environ = os.environ if environ is None else environ
    return environ.get("SLURM_JOB_ID") or environ.get("TORCHELASTIC_RUN_ID") or ""


def shown_config(cfg: Config) -> str:
    """The settings as /status shows them: every one but the control token, which is only
    said to be on or off."""
    shown = {k: v for k, v in dataclasses.asdict(cfg).items() if k != "control_token"}
    shown["control"] = "on" if cfg.control_token else "off"
    return json.dumps(shown, default=str)
