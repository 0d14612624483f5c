"""torch.profiler gets CUPTI to itself: the probe's GPU capture pauses for each profiling session.

Kineto (behind torch.profiler.profile, torch.autograd.profiler.profile, emit_nvtx, emit_itt)
registers its CUPTI activity kinds and callbacks when a session is prepared, and its buffers and
ours cannot share CUPTI. Every Python entry point reaches Kineto through the module-level names
torch.autograd.profiler._prepare_profiler / _enable_profiler / _disable_profiler (bound from
torch._C._autograd), so wrapping those three sees every session:

  prepare or enable (the first of a session)  -> sp_cupti_pause   before the call
  disable (also when it raises)               -> sp_cupti_resume  after the last open session

Sessions are counted, so nested or overlapping profilers hand CUPTI over once and take it back
once. Nothing here calls cuptiFinalize (the C side never does either). Kineto's on-demand path
(dynolog, KINETO_USE_DAEMON) starts sessions from C++ and is not seen here: install() says so in
one line, and the C side warns when another client takes CUPTI's buffers.

Without GPU capture (no driver, built-in runtime, capture not started) the pause and resume calls
return "disabled" and change nothing; the hand-overs are counted all the same (stats()).
"""
from __future__ import annotations

import functools
import os
import sys
import threading
import warnings
from typing import Any, Callable

_NAMES = ("_prepare_profiler", "_enable_profiler", "_disable_profiler")
_MARK = "_straggler_probe_profiler_guard"
_SP_OK = 0


class ProfilerGuard:
    """Wraps the three profiler entry points of one torch.autograd.profiler module."""

    def __init__(self, pause: Callable[[str], int], resume: Callable[[], int]) -> None:
        self._pause = pause
        self._resume = resume
        self._lock = threading.Lock()
        self._module: Any = None
        self._originals: dict[str, Callable[..., Any]] = {}
        self._open = 0          # profiler sessions prepared or enabled and not yet disabled
        self._prepared = 0      # of those, prepared and not yet enabled
        self._detach_pending = False
        self.handovers = 0      # CUPTI handed to the profiler (no session open -> one open)
        self.takebacks = 0      # and taken back (the last open session ended)
        self.capture_paused = 0   # hand-overs where the runtime really paused (capture was on)
        self.capture_resumed = 0  # take-backs where it really resumed

    # -- install / uninstall ------------------------------------------------------------------
    def install(self, module: Any) -> bool:
        """False (nothing changed) when the module lacks one of the three names."""
        with self._lock:
            if self._module is not None:
                return True
            if not all(callable(getattr(module, n, None)) for n in _NAMES):
                return False
            self._module = module
            self._detach_pending = False
            self._originals = {n: getattr(module, n) for n in _NAMES}
            wrappers = {"_prepare_profiler": self._wrap_prepare,
                        "_enable_profiler": self._wrap_enable,
                        "_disable_profiler": self._wrap_disable}
            for name in _NAMES:
                wrapper = functools.wraps(self._originals[name])(wrappers[name](self._originals[name]))
                setattr(wrapper, _MARK, self)
                setattr(module, name, wrapper)
            # A profiler already running (started before init()): it owns CUPTI now.
            if _profiler_running():
                self._open_session()
            return True

    def uninstall(self) -> None:
        """Restores the originals; while a session is open, after its end (so that it resumes)."""
        with self._lock:
            if self._module is None:
                return
            if self._open:
                self._detach_pending = True
                return
            self._restore()

    def _restore(self) -> None:  # lock held
        module, self._module = self._module, None
        for name, original in self._originals.items():
            current = getattr(module, name, None)
            # Someone wrapped ours since: leave the chain alone; our wrapper passes through.
            if getattr(current, _MARK, None) is self:
                setattr(module, name, original)
        self._originals = {}

    @property
    def installed(self) -> bool:
        return self._module is not None

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"installed": self._module is not None, "open_sessions": self._open,
                    "handovers": self.handovers, "takebacks": self.takebacks,
                    "capture_paused": self.capture_paused,
                    "capture_resumed": self.capture_resumed}

    # -- session accounting (lock held) -------------------------------------------------------
    def _open_session(self) -> None:
        self._open += 1
        if self._open == 1:
            self.handovers += 1
            if self._pause("torch.profiler") == _SP_OK:
                self.capture_paused += 1

    def _close_session(self) -> None:
        if self._open == 0:
            return  # a session that began before we were installed and was not seen running
        self._open -= 1
        self._prepared = min(self._prepared, self._open)
        if self._open == 0:
            self.takebacks += 1
            if self._resume() == _SP_OK:
                self.capture_resumed += 1
            if self._detach_pending:
                self._detach_pending = False
                self._restore()

    # -- wrappers -----------------------------------------------------------------------------
    def _wrap_prepare(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def _prepare_profiler(*args: Any, **kwargs: Any) -> Any:
            if self._module is None:
                return original(*args, **kwargs)
            with self._lock:
                self._open_session()  # before: Kineto takes CUPTI in prepare
                self._prepared += 1
            try:
                return original(*args, **kwargs)
            except BaseException:
                with self._lock:
                    self._prepared = max(0, self._prepared - 1)
                    self._close_session()
                raise
        return _prepare_profiler

    def _wrap_enable(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def _enable_profiler(*args: Any, **kwargs: Any) -> Any:
            if self._module is None:
                return original(*args, **kwargs)
            with self._lock:
                if self._prepared:
                    self._prepared -= 1  # the session its prepare opened
                else:
                    self._open_session()  # enabled without prepare (emit_nvtx, emit_itt)
            try:
                return original(*args, **kwargs)
            except BaseException:
                with self._lock:  # the session did not start: nobody will disable it
                    self._close_session()
                raise
        return _enable_profiler

    def _wrap_disable(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def _disable_profiler(*args: Any, **kwargs: Any) -> Any:
            try:
                return original(*args, **kwargs)
            finally:
                with self._lock:
                    self._close_session()
        return _disable_profiler


def _profiler_running() -> bool:
    try:
        import torch.autograd as autograd
        running = getattr(autograd, "_profiler_enabled", None)
        return bool(running()) if callable(running) else False
    except Exception:  # noqa: BLE001 - best effort
        return False


_guard: ProfilerGuard | None = None
_warned_missing = False
_said_daemon = False


def install(core: Any) -> Callable[[], None]:
    """Installs the guard once per process (idempotent); returns its uninstall."""
    global _guard, _warned_missing, _said_daemon
    try:
        import torch.autograd.profiler as module
    except Exception as err:  # noqa: BLE001 - no torch profiler: nothing to coexist with
        module, missing = None, f"torch.autograd.profiler cannot be imported ({err})"
    else:
        absent = [n for n in _NAMES if not callable(getattr(module, n, None))]
        missing = ("this torch has no torch.autograd.profiler." + ", ".join(absent)) if absent else ""
    if missing:
        if not _warned_missing:
            _warned_missing = True
            warnings.warn(f"straggler_probe: {missing}; GPU capture is not paused for "
                          "torch.profiler sessions (profile with the probe disabled: "
                          "STRAGGLER_PROBE_ENABLE=0)", RuntimeWarning, stacklevel=3)
        return _noop
    if _guard is None:
        _guard = ProfilerGuard(core.cupti_pause, core.cupti_resume)
    _guard.install(module)
    if not _said_daemon and os.environ.get("KINETO_USE_DAEMON", "") not in ("", "0"):
        _said_daemon = True
        sys.stderr.write("[straggler_probe] info: KINETO_USE_DAEMON is set: on-demand traces "
                         "(dynolog) start Kineto from C++, where the probe cannot pause for them; "
                         "it warns if another client takes CUPTI over\n")
    return _guard.uninstall


def stats() -> dict[str, Any] | None:
    return _guard.stats() if _guard is not None else None


def _noop() -> None:
    pass
