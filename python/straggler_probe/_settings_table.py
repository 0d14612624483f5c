"""The settings table: every STRAGGLER_PROBE_* setting of the Python package, once.

Each row gives the setting's name (the init() keyword; the variable is STRAGGLER_PROBE_ + its
upper case), the parser that checks a value (the environment's text, or a keyword's value as
text), the default, and the text docs/CONFIG.md shows. From this table come
  - the Python defaults and checks: `Config` and `load_config` (_config.py);
  - the C++ defaults: online/include/straggler_probe/online/setting_defaults.h, one constant per
    row with `cpp` (the analysis's settings, `start_pipeline`'s struct, `analyze-dir`'s flags);
  - docs/CONFIG.md's table.
scripts/gen_settings.py writes the last two; `gen_settings.py --check` (CTest structure_settings)
fails when either differs from what this table gives. Standard library only: the generator loads
this file without importing the package.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable


def _parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected one of 1/0, true/false, yes/no, on/off")


# A numeric parser carries its bounds (`lowest`: accepted, inclusive; `above` / `below`: the
# open interval), which scripts/gen_settings.py writes next to the C++ default, so that
# analyze-dir's flags refuse what the environment refuses.
def _parse_int(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text.strip(), 10)
        if value < minimum:
            raise ValueError(f"expected an integer >= {minimum}")
        return value
    parse.lowest = minimum  # type: ignore[attr-defined]
    return parse


def _parse_float(minimum: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = float(text.strip())
        if not value >= minimum:  # also rejects NaN
            raise ValueError(f"expected a number >= {minimum}")
        return value
    parse.lowest = float(minimum)  # type: ignore[attr-defined]
    return parse


def _parse_probability(text: str) -> float:
    value = float(text.strip())
    if not 0.0 < value < 1.0:  # also rejects NaN
        raise ValueError("expected a probability strictly between 0 and 1")
    return value


_parse_probability.above = 0.0  # type: ignore[attr-defined]
_parse_probability.below = 1.0  # type: ignore[attr-defined]


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
class Setting:
    name: str
    parse: Callable[[str], Any]  # text -> value; ValueError saying what it expects
    default: Any                 # None: unset (the docs say "(unset)" unless `shown` says more)
    doc: str                     # markdown, one paragraph: docs/CONFIG.md's "meaning"
    keyword: bool = True         # also an init() keyword (False: the environment only)
    shown: str | None = None     # the docs' default column, where the default's text says little
    cpp: str | None = None       # the C++ constant carrying this default (setting_defaults.h)
    cpp_unset: Any = None        # the C++ value standing for an unset default
    # The setting's name before a rename: still read (keyword and environment) for one release,
    # with a warning, so that a job's launch scripts keep working while they are updated.
    formerly: str | None = None


SETTINGS: tuple[Setting, ...] = (
    Setting("enable", _parse_bool, True,
            doc=(
            'Master switch; 0 makes init() a no-op.')),
    Setting("out_dir", _parse_str, "straggler_probe_out",
            doc=(
            "Directory for rank 0's JSONL and its report (rewritten every few steps, final at "
            'exit).')),
    Setting("rank", _parse_int(0), None,
            doc=(
            'Global rank until the default process group exists (default: `RANK`, else '
            '`LOCAL_RANK` (+ `NODE_RANK` x `LOCAL_WORLD_SIZE`), else 0). Once it exists (looked '
            "for at `init()` and at every step boundary) the process group's rank is used; a "
            'value given here or in `RANK` that it contradicts is one warning.')),
    Setting("world_size", _parse_int(1), None,
            doc=(
            'World size until the process group exists (default: `WORLD_SIZE`, else 1); then the '
            "group's, as for `rank`.")),
    Setting("dp_rank", _parse_int(0), None,
            doc=(
            'Data-parallel rank (default: inferred from the DDP group, else the global rank).')),
    Setting("pp_stage", _parse_int(0), None,
            doc=(
            'Pipeline stage (default: inferred from the DDP group, else no pipeline).')),
    Setting("steps", _parse_choice("auto", "manual"), "auto",
            doc=(
            'auto: a step ends at each `optimizer.step()`; manual: only at '
            '`straggler_probe.step()`.')),
    Setting("transport", _parse_choice("auto", "c10d", "python", "none"), "auto",
            doc=(
            "How summaries reach rank 0: c10d (C++ thread on the job's store), python (the "
            'transport thread drives the same store through Python), none (record only: summaries '
            'are dropped, nothing is analysed), auto (c10d, else python).')),
    Setting("hostname", _parse_str, None, keyword=False, shown="the host name",
            cpp="kHostname", cpp_unset="",
            doc=(
            'The host name the transport groups ranks by (with the network namespace) and '
            'verdicts name; for tests and clusters whose host names say little.')),
    Setting("transport_protocol", _parse_choice("auto", "host", "rank"), "auto", keyword=False,
            cpp="kTransportProtocol",
            doc=(
            "auto: each host's ranks send through one leader, one store message per host and "
            'step, when the store has append and compare_set (c10d since torch 2.1), else every '
            'rank writes its own key (rank); host / rank force one (rank_pipeline/README.md).')),
    Setting("warmup_steps", _parse_int(0), 2, cpp="kWarmupSteps",
            doc=(
            'First training steps left out of the analysis (one-off costs: allocator warm-up, DDP '
            'bucket rebuild, compilation).')),
    Setting("clock_sync", _parse_bool, True, cpp="kClockSync",
            doc=(
            "Estimate each rank's clock offset to rank 0 over the job's store (at start, then "
            "every `clock_sync_period`), applied to the rank's summaries so that times from "
            'different hosts compare; rank 0 logs it and report.json has a `clock` section. 0: '
            'offsets stay 0 (fine on one host).')),
    Setting("clock_sync_period", _parse_float(1.0), 60.0, cpp="kClockSyncPeriodS",
            doc=(
            'Seconds between re-estimates of the clock offsets (tracks drift; the skew in ppm '
            'comes from successive estimates). At least 1.')),
    Setting("max_lag", _parse_int(1), 8, cpp="kMaxLag",
            doc=(
            'Steps rank 0 may fall behind before whole steps are skipped.')),
    Setting("analysis_timeout", _parse_float(0.1), 30.0, cpp="kAnalysisTimeoutS",
            doc=(
            "Seconds one step's analysis may take on rank 0 before the probe steps aside.")),
    Setting("step_timeout", _parse_float(0.1), 60.0, cpp="kStepTimeoutS",
            doc=(
            "Seconds rank 0 waits for a step's summaries from all ranks before skipping it.")),
    Setting("log_lines", _parse_bool, True, cpp="kLogLines",
            doc=(
            'Rank 0 prints one `straggler_probe` line per step.')),
    Setting("slowdown_threshold", _parse_float(1.0), 1.0, cpp="kSlowdownThreshold",
            doc=(
            'A user override: a step whose slowdown S (real / ideal time) is below this has cause '
            '`none` and names no straggler, whatever the noise model says. 1.0 (the default) '
            'leaves the decision to the noise model learned from the job (online/README.md, '
            '"Noise model"). At least 1.')),
    Setting("significance", _parse_probability, 1e-3, cpp="kSignificance",
            doc=(
            'Per-step significance level: a step names a straggler or a cause only when its test '
            'against the noise model learned from the job gives p below this (on a healthy job '
            'about this share of steps name anyone; online/README.md, "Noise model"). Strictly '
            'between 0 and 1; analyze-dir: `--significance`.')),
    Setting("alarm_significance", _parse_probability, 1e-5, cpp="kAlarmSignificance",
            doc=(
            "A job-level alarm (a log line, a JSONL record, report.json's `alarms`) is raised "
            'when its test over the recent steps gives p below this; a healthy job raises about '
            '1000 x this alarms per 1000 steps. Strictly between 0 and 1; analyze-dir: '
            '`--alarm-significance`.')),
    Setting("window_steps", _parse_int(2), 20, cpp="kWindowSteps",
            doc=(
            'Recent analysed steps over which the ideal (straggler-free) durations are estimated. '
            'At least 2.')),
    Setting("recap_interval", _parse_int(0), 50, cpp="kRecapInterval", formerly="summary_interval",
            doc=(
            'Rank 0 prints a recap of the last N analysed steps every N steps: the causes named, '
            'what they cost (the ledger) and the per-worker S_w heatmap (0: never; the report at '
            'exit has it anyway).')),
    Setting("gc", _parse_bool, True,
            doc=(
            'Record Python GC pauses (`gc.callbacks`).')),
    Setting("dataloader", _parse_bool, True,
            doc=(
            'Record time waiting for DataLoader batches.')),
    Setting("collectives", _parse_bool, True,
            doc=(
            'Record torch.distributed collectives and p2p calls (and DDP buckets, below DDP or by '
            '`ddp_comm_hook`).')),
    Setting("modules", _parse_bool, True,
            doc=(
            'Record forward/backward per micro-batch and the optimizer.')),
    Setting("seq_lens", _parse_choice("auto", "off"), "auto",
            doc=(
            'auto: take sequence lengths from `cu_seqlens` / `attention_mask` in batches and '
            'forward arguments; off.')),
    Setting("cuda_events", _parse_choice("auto", "on", "off"), "auto",
            doc=(
            'Time regions with CUDA events on the stream. auto: when the model runs on CUDA and '
            "the GPU capture (CUPTI) is not active; while it is, the CUPTI spans of the regions' "
            'kernels time them and the regions take CPU stamps (no CUDA event, no resolver '
            'thread); on: CUDA events also then; off: never (CPU stamps).')),
    Setting("ddp_comm_hook", _parse_choice("auto", "on", "off"), "auto",
            doc=(
            'Whether the probe may register its own timed comm hook on DDP models, to see their '
            'gradient-bucket all-reduces (DDP cannot unregister a hook: the job keeps it, also '
            'after `shutdown()`). Never on NCCL models, whatever the value: the NCCL layer of '
            '`libstraggler_probe.so` sees their buckets. auto: only on a non-NCCL (gloo) model '
            "when torch's ProcessGroup has no pre/post hooks (torch before 2.15), where nothing "
            "else sees the buckets; from 2.15 the process-group hooks see the reducer's "
            'all-reduces and the model is left as DDP made it. on: on every non-NCCL model. off: '
            'never; on a gloo job with torch before 2.15 the buckets then go unseen (one warning '
            "counts them): the analysis sees no communication tying the ranks' steps, and a rank "
            'that holds the others up at the all-reduce is not told from the ranks that wait for '
            'it (docs/PYTHON.md).')),
    Setting("hang_after_s", _parse_float(0.0), 10.0, cpp="kHangAfterS",
            doc=(
            'Hang detection ("silence is evidence", rank_pipeline/README.md): rank 0 says '
            '`straggler_probe hang suspected step=...` once a step has not completed on every '
            "rank for max(`hang_multiple` x the job's median step, this many seconds), naming the "
            'ranks whose heartbeat stopped (silent), those behind the others, and the ranks '
            'waiting, with host, GPU, last op and how long ago; again as the stall doubles, and '
            "`hang resumed` when steps complete; report.json's `hangs` keeps the episodes. The "
            "step that took longer than the same bound (the analysis' median of its recent steps) "
            "is `cause=hang`, naming the rank that stopped from the step's own events, and "
            'nothing is learned from it (online/README.md, "Cause rules"). Before any step is '
            'known the bound is 3 x this (a job of 20 s steps is no hang at 10 s); with one or '
            'two known, the largest of them stands in for the median (a fast job frozen in its '
            "first second gets this, not 3 x this; a slow job's first steps raise the bound at "
            'once); it is never under 2.5 s (the time silence takes to show). 0: off. At least 0.')),
    Setting("hang_multiple", _parse_float(1.0), 20.0, cpp="kHangMultiple",
            doc=(
            'The hang bound in typical (median) steps; see `hang_after_s`. At least 1.')),
    Setting("hang_dump", _parse_bool, False,
            doc=(
            'When rank 0 suspects a hang, every rank that can still run appends its Python stacks '
            '(every thread, `faulthandler`) to `out_dir/hang_stacks_rank<R>.txt`, from a thread '
            "of the probe's that waits for the notice (no signal handler). A frozen rank writes "
            'its dump when it runs again.')),
    Setting("timeline_ranks", _parse_int(1), None, cpp="kTimelineRanks", cpp_unset=0,
            doc=(
            "The ranks whose lanes rank 0's `report/timeline.json` draws (Perfetto / "
            "chrome://tracing: each rank's ops of the last 3 analysed steps, real and ideal). "
            'Unset: every rank while the file stays within 16 MiB (a browser parses a JSON trace '
            'whole, at several times its size: tens of MB open in seconds, the 130 MB of a '
            '4096-rank job did not; rank 0 also rewrites the file while the job runs), which is '
            'every rank of a job of a few hundred (bench/README.md, "Long runs"); beyond that '
            "rank 0, the ranks the drawn steps named, each stage's slowest rank, then the slowest "
            'by S_w with every fourth pick the fastest, up to the budget. `N`: at most N ranks, '
            "chosen the same way; the job's size draws every rank. When ranks are left out, the "
            'file says how many and this setting (`otherData.straggler_probe_timeline`, and a '
            'marker at the start of the trace). At least 1.')),
    Setting("metrics_port", _parse_int(0), 0, cpp="kMetricsPort",
            doc=(
            'Rank 0 serves Prometheus metrics on this TCP port: `/metrics` (text format), '
            '`/status` (JSON) and `POST /control` ("Metrics, status and control" below), from a '
            'thread of its own. 0: no server. A port it cannot listen on is one warning; training '
            'goes on.')),
    Setting("metrics_addr", _parse_str, "127.0.0.1", cpp="kMetricsAddr",
            doc=(
            'The IPv4 address the metrics server listens on: loopback unless told otherwise '
            '(`0.0.0.0`: every interface, for a Prometheus on another host).')),
    Setting("metrics_file", _parse_str, None, shown="(none)", cpp="kMetricsFile", cpp_unset="",
            doc=(
            "Rank 0 also writes the metrics to this file for node_exporter's textfile collector "
            "(name it `*.prom` in the collector's directory), replaced whole (a temporary file "
            'renamed) about once a second when something changed, and once more at the end. Works '
            'with or without a port.')),
    Setting("control_token", _parse_str, None, shown="(none)", cpp="kControlToken", cpp_unset="",
            doc=(
            '`POST /control` is obeyed only when this is set and the request carries '
            '`Authorization: Bearer <token>` (compared in constant time); otherwise 403 with one '
            'line saying why. Never shown in `/status`.')),
    Setting("fault_inject", _parse_choice("none", "throw", "stall", "slow", "record", "socket",
                                         "delay"), "none", cpp="kFaultInject",
            doc=(
            "Test hook: make rank 0's analysis throw or stall after 3 steps (the step-aside "
            "path), or take 500 ms per step (falling behind); `record`: rank 1's recording fails "
            'at step 5 (every rank steps aside); `socket`: at step 5 a member (the highest rank '
            'that does not lead its host) closes its socket to its leader (it sends as a host of '
            "its own from then on); `delay`: at step 5 rank 1's transport thread stalls for 4 s "
            '(its summaries and heartbeats come late).')),
)
