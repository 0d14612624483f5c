"""Configuration: keyword arguments of init() over STRAGGLER_PROBE_* environment variables over defaults.

A wrong value is one ConfigError naming the variable (or keyword) and what it accepts: nothing is
guessed, so a typo in a job script cannot silently turn a feature off.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable, Mapping

ENV_PREFIX = "STRAGGLER_PROBE_"


class ConfigError(ValueError):
    """A configuration value straggler_probe cannot use; the message names it."""


def _parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected one of 1/0, true/false, yes/no, on/off")


def _parse_int(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text.strip(), 10)
        if value < minimum:
            raise ValueError(f"expected an integer >= {minimum}")
        return value
    return parse


def _parse_float(minimum: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = float(text.strip())
        if not value >= minimum:  # also rejects NaN
            raise ValueError(f"expected a number >= {minimum}")
        return value
    return parse


def _parse_probability(text: str) -> float:
    value = float(text.strip())
    if not 0.0 < value < 1.0:  # also rejects NaN
        raise ValueError("expected a probability strictly between 0 and 1")
    return value


def _parse_choice(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        low = text.strip().lower()
        if low not in choices:
            raise ValueError("expected one of " + ", ".join(choices))
        return low
    return parse


def _parse_str(text: str) -> str:
    if not text.strip():
        raise ValueError("expected a non-empty value")
    return text.strip()


@dataclasses.dataclass(frozen=True)
class _Field:
    parse: Callable[[str], Any]
    default: Any
    doc: str


# The single source of truth for every option: docs/CONFIG.md is written from this table.
FIELDS: dict[str, _Field] = {
    "enable": _Field(_parse_bool, True, "Master switch; 0 makes init() a no-op."),
    "out_dir": _Field(_parse_str, "straggler_probe_out", "Directory for rank 0's JSONL and its report (rewritten every few steps, final at exit)."),
    "rank": _Field(_parse_int(0), None, "Global rank until the default process group exists "
                   "(default: RANK, else LOCAL_RANK, else 0); then the group's (a contradiction warns)."),
    "world_size": _Field(_parse_int(1), None, "World size until the process group exists "
                         "(default: WORLD_SIZE, else 1); then the group's."),
    "dp_rank": _Field(_parse_int(0), None, "Data-parallel rank (default: inferred from the DDP group, else the global rank)."),
    "pp_stage": _Field(_parse_int(0), None, "Pipeline stage (default: inferred from the DDP group, else no pipeline)."),
    "steps": _Field(_parse_choice("auto", "manual"), "auto",
                    "auto: a step ends at each optimizer.step(); manual: only at straggler_probe.step()."),
    "transport": _Field(_parse_choice("auto", "c10d", "python", "none"), "auto",
                        "How summaries reach rank 0: c10d (C++ thread on the job's store), python "
                        "(daemon thread on the same store), none (record only: summaries are dropped, nothing is "
                        "analysed), auto (c10d, else python)."),
    "warmup_steps": _Field(_parse_int(0), 2,
                           "First training steps left out of the analysis (one-off costs: allocator "
                           "warm-up, DDP bucket rebuild, compilation)."),
    "clock_sync": _Field(_parse_bool, True,
                         "Estimate each rank's clock offset to rank 0 over the job's store (at start, "
                         "then every clock_sync_period), so that times from different hosts compare."),
    "clock_sync_period": _Field(_parse_float(1.0), 60.0,
                                "Seconds between re-estimates of the clock offsets (tracks drift, measures skew)."),
    "max_lag": _Field(_parse_int(1), 8, "Steps rank 0 may fall behind before whole steps are skipped."),
    "analysis_timeout": _Field(_parse_float(0.1), 30.0,
                               "Seconds one step's analysis may take on rank 0 before the probe steps aside."),
    "step_timeout": _Field(_parse_float(0.1), 60.0,
                           "Seconds rank 0 waits for a step's summaries from all ranks before skipping it."),
    "log_lines": _Field(_parse_bool, True, "Rank 0 prints one straggler_probe line per step."),
    "slowdown_threshold": _Field(_parse_float(1.0), 1.0,
                                 "A user override: a step whose slowdown S (real / ideal time) is below "
                                 "this has cause none and names no straggler, whatever the noise model "
                                 "says (1.0: off, the noise model learned from the job decides)."),
    "significance": _Field(_parse_probability, 1e-3,
                           "Per-step significance level: a step names a straggler or a cause only when "
                           "its test against the noise model learned from the job gives p below this "
                           "(on a healthy job about this share of steps name anyone)."),
    "alarm_significance": _Field(_parse_probability, 1e-5,
                                 "A job-level alarm is raised when its test over the recent steps gives p "
                                 "below this (a healthy job raises about 1000 x this alarms per 1000 steps)."),
    "window_steps": _Field(_parse_int(2), 20,
                           "Recent analysed steps the ideal (straggler-free) durations are estimated over."),
    "summary_interval": _Field(_parse_int(0), 50,
                               "Rank 0 prints a text summary with the per-worker S_w heatmap every N "
                               "analysed steps (0: never; the report at exit has it anyway)."),
    "gc": _Field(_parse_bool, True, "Record Python GC pauses (gc.callbacks)."),
    "dataloader": _Field(_parse_bool, True, "Record time waiting for DataLoader batches."),
    "collectives": _Field(_parse_bool, True, "Record torch.distributed collectives and p2p calls."),
    "modules": _Field(_parse_bool, True, "Record forward/backward per micro-batch and the optimizer."),
    "seq_lens": _Field(_parse_choice("auto", "off"), "auto",
                       "auto: take sequence lengths from cu_seqlens / attention_mask in batches and forward kwargs."),
    "cuda_events": _Field(_parse_choice("auto", "on", "off"), "auto",
                          "Time regions with CUDA events on the stream. auto: when the model runs "
                          "on CUDA and the GPU capture (CUPTI) is not active (when it is, its kernel "
                          "spans time the regions, which take host stamps); on: also when it is; "
                          "off: never (host stamps)."),
    "ddp_comm_hook": _Field(_parse_choice("auto", "on", "off"), "auto",
                            "Time DDP's gradient buckets with a Python comm hook of the probe's "
                            "(never on NCCL). auto: only on a gloo DDP job whose torch has no "
                            "ProcessGroup pre/post hooks (before 2.15), where nothing else sees the "
                            "buckets; on: on every non-NCCL DDP model; off: never."),
    "hang_after_s": _Field(_parse_float(0.0), 10.0,
                           "Rank 0 says a hang is suspected once a step has not completed on every "
                           "rank for max(hang_multiple x the median step, this many seconds), naming "
                           "the ranks that went silent or are furthest behind; the step that took longer "
                           "than this bound is cause=hang, naming the rank that stopped (0: off)."),
    "hang_multiple": _Field(_parse_float(1.0), 20.0,
                            "The hang bound in typical steps (see hang_after_s)."),
    "hang_dump": _Field(_parse_bool, False,
                        "When rank 0 suspects a hang, every rank that can still run writes its "
                        "Python stacks to out_dir/hang_stacks_rank<R>.txt (faulthandler)."),
    "timeline_ranks": _Field(_parse_int(1), None,
                             "The ranks drawn in the report's timeline.json (default: every rank while "
                             "the file stays within 16 MiB; beyond that rank 0, the named ranks, each "
                             "stage's slowest and the slowest / fastest by score, up to it). N: at most "
                             "N ranks, chosen the same way (the job's size draws every rank)."),
    "metrics_port": _Field(_parse_int(0), 0,
                           "Rank 0 serves Prometheus metrics on this TCP port (/metrics, also "
                           "/status and POST /control), from a thread of its own (0: no server)."),
    "metrics_addr": _Field(_parse_str, "127.0.0.1",
                           "The address the metrics server listens on (loopback unless told "
                           "otherwise; 0.0.0.0: every interface)."),
    "metrics_file": _Field(_parse_str, None,
                           "Rank 0 also writes the metrics to this file (node_exporter's textfile "
                           "collector: name it *.prom in its directory), replaced whole about once a second."),
    "control_token": _Field(_parse_str, None,
                            "POST /control (pause/resume the analysis, change the significance levels, "
                            "write the report now) is "
                            "obeyed only from requests carrying Authorization: Bearer <this>; "
                            "unset: every control request is refused (403)."),
    "fault_inject": _Field(_parse_choice("none", "throw", "stall", "slow", "record", "socket",
                                         "delay"), "none",
                           "Test hook: make rank 0's analysis throw or stall (the step-aside path), "
                           "or take 500 ms per step (falling behind); record: rank 1's recording "
                           "fails at step 5; socket: a member closes its socket to its host's "
                           "leader at step 5; delay: rank 1's transport stalls 4 s at step 5."),
}


@dataclasses.dataclass
class Config:
    enable: bool = True
    out_dir: str = "straggler_probe_out"
    rank: int | None = None
    world_size: int | None = None
    dp_rank: int | None = None
    pp_stage: int | None = None
    steps: str = "auto"
    transport: str = "auto"
    warmup_steps: int = 2
    clock_sync: bool = True
    clock_sync_period: float = 60.0
    max_lag: int = 8
    analysis_timeout: float = 30.0
    step_timeout: float = 60.0
    log_lines: bool = True
    slowdown_threshold: float = 1.0
    significance: float = 1e-3
    alarm_significance: float = 1e-5
    window_steps: int = 20
    summary_interval: int = 50
    gc: bool = True
    dataloader: bool = True
    collectives: bool = True
    modules: bool = True
    seq_lens: str = "auto"
    cuda_events: str = "auto"
    ddp_comm_hook: str = "auto"
    hang_after_s: float = 10.0
    hang_multiple: float = 20.0
    hang_dump: bool = False
    timeline_ranks: int | None = None
    metrics_port: int = 0
    metrics_addr: str = "127.0.0.1"
    metrics_file: str | None = None
    control_token: str | None = None
    fault_inject: str = "none"


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


def load_config(kwargs: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Config:
    """Build the configuration; raises ConfigError on an unknown keyword or a malformed value."""
    environ = os.environ if environ is None else environ
    unknown = sorted(set(kwargs) - set(FIELDS))
    if unknown:
        raise ConfigError(f"straggler_probe.init(): unknown keyword argument(s) {', '.join(unknown)}; "
                          f"known: {', '.join(FIELDS)}")
    values: dict[str, Any] = {}
    for name, field in FIELDS.items():
        if name in kwargs and kwargs[name] is not None:
            values[name] = _from_kwarg(name, field, kwargs[name])
            continue
        raw = environ.get(env_name(name))
        if raw is None:
            values[name] = field.default
            continue
        try:
            values[name] = field.parse(raw)
        except ValueError as err:
            raise ConfigError(f"{env_name(name)}={raw!r} is invalid: {err}") from None
    return Config(**values)


def _from_kwarg(name: str, field: _Field, value: Any) -> Any:
    # Keywords go through the same parser as the environment, so both accept the same values.
    text = str(int(value)) if isinstance(value, bool) else str(value)
    try:
        return field.parse(text)
    except ValueError as err:
        raise ConfigError(f"straggler_probe.init({name}={value!r}) is invalid: {err}") from None


# Variables other components of straggler_probe read themselves (the runtime, the analysis):
# prefixes, so that their sections of docs/CONFIG.md can grow without touching this file.
_FOREIGN_ENV_PREFIXES = ("LOG", "VERBOSE", "RING", "MAX_THREADS", "MAX_EVENTS", "QUEUE",
                         "STEP_GRACE", "STEP_MARKER", "STEP_NVTX", "DRAIN", "CUPTI", "NCCL", "PRELOAD", "PYTHON",
                         "LIB", "HEATMAP", "REPORT", "JSONL", "ONLINE", "CLI")


def unknown_env(environ: Mapping[str, str] | None = None) -> list[str]:
    """STRAGGLER_PROBE_* variables nobody reads: a misspelling would otherwise go unnoticed."""
    environ = os.environ if environ is None else environ
    known = {env_name(n) for n in FIELDS}
    return sorted(k for k in environ
                  if k.startswith(ENV_PREFIX) and k not in known
                  and not k[len(ENV_PREFIX):].startswith(_FOREIGN_ENV_PREFIXES))
