"""straggler_probe: names straggler workers and their causes, step by step, from rank 0.

    import straggler_probe
    straggler_probe.init()          # in every rank; no arguments needed under torchrun

Everything else is automatic (steps, forward/backward per micro-batch, the optimizer,
torch.distributed calls, DDP buckets, GC pauses, data-loader waits). Options: keyword arguments
of init() or STRAGGLER_PROBE_* environment variables (docs/CONFIG.md).
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

from . import _native
from ._config import Config, ConfigError, former_names_used, load_config, unknown_env

__version__ = "0.1.0"
__all__ = ["init", "shutdown", "step", "annotate", "region", "stats", "is_enabled", "out_dir",
           "ConfigError", "Config"]

_lock = threading.Lock()
_probe: Any = None
_sessions = 0
_exit_registered = False


def init(**kwargs: Any) -> bool:
    """Start the probe in this process. Returns True when it is recording.

    Idempotent. Raises ConfigError for a bad keyword or STRAGGLER_PROBE_* value (before anything
    is installed); every later failure of the probe is one warning and training goes on.
    """
    global _probe, _sessions, _exit_registered
    cfg = load_config(kwargs)
    with _lock:
        if _probe is not None:
            return True
        if not cfg.enable:
            return False
        if _native.IMPORT_ERROR is not None:
            raise ImportError(_native.IMPORT_ERROR)
        import warnings
        for name in unknown_env():
            warnings.warn(f"straggler_probe: {name} is not a setting anyone reads (misspelt?); "
                          "see docs/CONFIG.md", RuntimeWarning, stacklevel=2)
        for message in former_names_used(kwargs):
            warnings.warn(f"straggler_probe: {message}", FutureWarning, stacklevel=2)
        from ._probe import Probe, register_exit
        _sessions += 1
        _probe = Probe(cfg, _sessions)
        if not _exit_registered:
            _exit_registered = True
            register_exit(lambda: _probe, _exit_drain_s)
        return True


def _exit_drain_s() -> float:
    # Rank 0 waits a little for the other ranks' last summaries; the others only send theirs.
    probe = _probe
    if probe is None:
        return 0.0
    return min(10.0, probe.cfg.step_timeout) if probe.rank == 0 else 3.0


def shutdown() -> None:
    """Stop recording, send the last summaries and (rank 0) write the report. Also at exit."""
    global _probe
    with _lock:
        probe, _probe = _probe, None
    if probe is not None:
        probe.close(min(10.0, probe.cfg.step_timeout) if probe.rank == 0 else 3.0)


def step() -> None:
    """Mark the end of a training step by hand (turns off the optimizer-based detection)."""
    probe = _probe
    if probe is not None and not probe.rec.failed:
        probe.manual_step()


def annotate(seq_lens: Any = None, microbatch: int | None = None, **values: Any) -> None:
    """Attach facts to the current micro-batch (the one running, else the next to start).

    seq_lens: the micro-batch's sequence lengths (list/tuple/tensor of ints); the analysis uses
    them to recognise sequence-length imbalance (compute tracking sum(len^2)). Other keyword
    values are stored as text.
    """
    probe = _probe
    if probe is None or probe.rec.failed:
        return
    rec = probe.rec
    mb = rec.current_microbatch if microbatch is None else int(microbatch)
    if seq_lens is not None:
        if hasattr(seq_lens, "tolist"):
            seq_lens = seq_lens.tolist()
        lengths = [int(x) for x in seq_lens]
        if any(x < 0 for x in lengths):
            raise ValueError("straggler_probe.annotate: sequence lengths must be >= 0")
        from .hooks.seqlens import encode
        rec.annotate(mb, "seq_lens", encode(lengths))
        if probe.modules is not None:
            probe.modules.annotated.add(mb)
    for key, value in values.items():
        rec.annotate(mb, str(key), str(value))


@contextlib.contextmanager
def region(name: str) -> Iterator[None]:
    """Time a block of your own as an op of the step (kind 'other', compared by name)."""
    probe = _probe
    if probe is None or probe.rec.failed:
        yield
        return
    rec = probe.rec
    name_id = rec.intern(name)
    start = rec.timer.stamp()
    try:
        yield
    finally:
        rec.timer.submit(_native.OTHER, start, rec.timer.stamp(), -1, name_id, _native.STREAM_MAIN,
                         rec.step)


def out_dir() -> str | None:
    """Where rank 0 writes its JSONL and report (None before init())."""
    probe = _probe
    return None if probe is None else probe.cfg.out_dir


def is_enabled() -> bool:
    probe = _probe
    return probe is not None and not probe.rec.failed


def stats() -> dict[str, Any]:
    """Counters of this rank: runtime (events, drops), pipeline (bytes sent, steps analysed...)."""
    probe = _probe
    if probe is None:
        out: dict[str, Any] = {"enabled": False}
        if _native.core is not None:
            out["pipeline"] = _native.core.pipeline_status()
        return out
    return probe.stats()
