"""One probe per process: configuration, the core, the hooks and the background pipeline, and
their order of start-up and shut-down.

Start-up may happen before torch.distributed is initialised (init() is usually the first line of
a training script): recording starts at once under the rank the launcher's variables suggest
(_identity.py), and at each step boundary until the default process group exists the probe looks
again; once it does, its rank and world size are the ones used (the runtime re-stamps what it
already queued: sp_set_rank) and the transport starts. A job without torch.distributed starts
its (single-rank) transport at the first step boundary. Summaries made before that wait in the
core's bounded queue.
"""
from __future__ import annotations

import atexit
import sys
import threading
import warnings
from typing import Any, Callable

from . import _native as N
from . import _identity, _topology, _transport
from ._config import Config, ConfigError
from ._recorder import Recorder
from ._timing import CudaEventTimer, CuptiRegionTimer, GpuRegionTags, CpuTimer


class Probe:
    STATUS_EVERY = 8  # steps between looks at the pipeline's state (it may have stepped aside)

    def __init__(self, cfg: Config, session: int):
        import torch
        import torch.distributed as dist

        self.cfg = cfg
        self.session = session
        self.torch = torch
        self.dist = dist if dist.is_available() else None
        self.core = N.core
        self.identity, disagreement = _identity.resolve(cfg.rank, cfg.world_size, self.dist)
        if disagreement:
            warnings.warn(f"straggler_probe: {disagreement}", RuntimeWarning, stacklevel=3)
        self.transport: str | None = None
        self._uninstall: list[Callable[[], None]] = []
        self._closed = False
        self._lock = threading.Lock()
        self._topology_explicit = cfg.dp_rank is not None or cfg.pp_stage is not None
        self._topology_from_stage = False
        self.modules: Any = None
        self.optimizer: Any = None
        self.collectives: Any = None
        self.process_groups: Any = None
        self.ddp: Any = None
        self.gc: Any = None

        status, message = self.core.init(self.rank, self.world, self.local_rank)
        if status != 0 and (status == 2 or "STRAGGLER_PROBE_" in message):
            # one of the runtime's own settings (runtime/README.md) is wrong: it said which
            raise ConfigError(f"straggler_probe: {message}")
        if status != 0:
            raise RuntimeError(f"straggler_probe: the runtime did not start: {message}")
        if self._topology_explicit:
            self.core.set_topology(-1 if cfg.dp_rank is None else cfg.dp_rank,
                                   -1 if cfg.pp_stage is None else cfg.pp_stage)
        # CPU timing until training starts: only then is it known whether the model runs on
        # CUDA (and on which device), and creating CUDA events earlier would open a context on
        # device 0 in every rank.
        self.timer: Any = CpuTimer(self.core.record)
        self.rec = Recorder(self.core, self.timer)
        self.rec.on_step_marked = self._on_step_marked
        self.rec.on_training_start = self._on_training_start
        self.rec.on_fail = self.core.request_stop
        self.rec.on_no_steps = self._no_steps
        from ._sight import Sight
        self.sight = Sight(self)
        self._hang_dump: Any = None
        try:
            self._install_hooks()
        except Exception:
            self.close(drain_s=0.0)
            raise
        self._maybe_start_transport()
        if cfg.hang_dump:  # stacks to out_dir when rank 0 suspects a hang (_hang_dump.py)
            from ._hang_dump import HangDumper
            self._hang_dump = HangDumper(self.core, cfg.out_dir, lambda: self.rank)

    @property
    def rank(self) -> int:
        return self.identity.rank

    @property
    def world(self) -> int:
        return self.identity.world

    @property
    def local_rank(self) -> int:
        return self.identity.local_rank

    # -- set-up ---------------------------------------------------------------------------------
    def _on_training_start(self) -> None:
        self._choose_timer()
        if self.process_groups is not None:
            # groups made after init() (the default one, FSDP's, a DeviceMesh's) exist by now:
            # hooked before the first step's collectives, not at the first step boundary
            self.process_groups.find_groups()

    def _choose_timer(self) -> None:
        """At the first sign of training: whether the job uses CUDA (it has initialised it by
        now, e.g. by moving the model). On CUDA the GPU capture starts (NCCL's first communicator
        would too) and, while it is active, its CUPTI spans time the regions (tagged here) and
        they take CPU stamps; without it, CUDA events do (_timing.py)."""
        cuda = self.torch.cuda
        setting = self.cfg.cuda_events
        on_cuda = cuda.is_available() and cuda.is_initialized()
        if not on_cuda and setting != "on":
            return  # a CPU job: CPU time
        on_capture = getattr(self.core, "gpu_graph_capture", None)
        gpu_capture = on_cuda and self._start_gpu_capture()
        if gpu_capture:
            self.rec.gpu = GpuRegionTags(self.core)
        if setting == "on" or (setting == "auto" and not gpu_capture):
            self.timer = CudaEventTimer(self.core.record, self.torch, on_capture=on_capture)
        elif gpu_capture:
            self.timer = CuptiRegionTimer(self.core.record, self.torch, on_capture=on_capture)
        else:
            return  # cuda_events=off and no GPU capture: CPU time
        self.rec.timer = self.timer

    def _start_gpu_capture(self) -> bool:
        """Starts CUPTI capture; True when it is active (the runtime has it, it started, and
        sp_cupti_get_stats says active)."""
        core = self.core
        try:
            if not core.has_gpu_capture() or not core.cupti_start():
                return False
            stats = core.cupti_stats()
            return bool(stats and stats.get("active"))
        except Exception:  # noqa: BLE001 - no GPU capture: CUDA events time the regions
            return False

    def _install_hooks(self) -> None:
        from .hooks.autograd import AutogradHooks
        from .hooks.dataloader import DataLoaderHooks
        from .hooks.gc_pause import GcHooks
        from .hooks.modules import ModuleHooks
        from .hooks.optimizer import OptimizerHooks

        cfg, rec, torch = self.cfg, self.rec, self.torch
        on_top_level: list[Callable[[Any], None]] = [self._infer_topology]
        if cfg.collectives and self.dist is not None:
            from .hooks.collectives import CollectiveHooks
            from .hooks.ddp import DdpHooks
            from .hooks.process_group import ProcessGroupHooks
            self.collectives = CollectiveHooks(rec, self.dist, self.rank)
            self._uninstall.append(self.collectives.install())
            from .hooks.native_nccl import nccl_layer_in_process
            self.process_groups = ProcessGroupHooks(rec, self.dist, self.collectives,
                                                    leave_nccl=nccl_layer_in_process(self.core))
            self._uninstall.append(self.process_groups.install())
            rec.on_backward_end = self.process_groups.after_backward
            from torch.nn.parallel import DistributedDataParallel
            self.ddp = DdpHooks(rec, self.collectives, DistributedDataParallel, self.dist,
                                cfg.ddp_comm_hook, self.process_groups.mode == "hooks")
            self._uninstall.append(self.ddp.install())
            on_top_level.insert(0, self.ddp.on_top_level)
        if cfg.modules:
            self.modules = ModuleHooks(rec, torch, cfg.seq_lens == "auto",
                                       on_top_level=lambda m: [f(m) for f in on_top_level])
            self._uninstall.append(self.modules.install())
            self._uninstall.append(AutogradHooks(rec, torch).install())
            self.optimizer = OptimizerHooks(
                rec, torch, self.rec.end_step if cfg.steps == "auto" else None)
            self._uninstall.append(self.optimizer.install())
            rec.on_first_forward = self.optimizer.forward_started
        if cfg.modules and self.dist is not None:
            from .hooks.pipelining import PipeliningHooks
            self._uninstall.append(
                PipeliningHooks(rec, torch, self.dist, self._pipeline_topology).install())
        if cfg.gc:
            self.gc = GcHooks(rec)
            self._uninstall.append(self.gc.install())
        if cfg.dataloader:
            on_batch = self._on_batch_seq_lens if (cfg.seq_lens == "auto" and self.modules) else None
            self._uninstall.append(DataLoaderHooks(rec, torch, on_batch).install())
        from . import _profiler_guard  # GPU capture pauses while torch.profiler runs
        self._uninstall.append(_profiler_guard.install(self.core))

    def _on_batch_seq_lens(self, lengths: list[int]) -> None:
        self.modules.pending_seq_lens = lengths

    def _pipeline_topology(self, dp_rank: int | None, pp_stage: int) -> None:
        """A pipeline stage said where this rank sits (hooks/pipelining.py): that beats the DDP
        group's layout, not the user's explicit settings."""
        if self._topology_explicit:
            return
        self._topology_from_stage = True
        self.core.set_topology(-1 if dp_rank is None else dp_rank, pp_stage)

    def _infer_topology(self, module: Any) -> None:
        if self._topology_explicit or self._topology_from_stage or self.dist is None:
            return
        group = getattr(module, "process_group", None)
        if group is None:
            return
        try:
            ranks = list(self.dist.distributed_c10d.get_process_group_ranks(group))
        except Exception:  # noqa: BLE001
            return
        found = _topology.infer_dp_pp(ranks, self.rank, self.world)
        if found is not None:
            self.core.set_topology(found[0], found[1])

    def _settle_identity(self) -> bool:
        """Adopts the live process group's rank and world size once it exists (True then)."""
        if self.identity.live:
            return True
        live = _identity.from_process_group(self.dist)
        if live is None:
            return False
        found = _identity.Identity(live[0], live[1], self.identity.local_rank,
                                   _identity.PROCESS_GROUP)
        disagreement = _identity.disagreement(self.identity, found)
        if disagreement:
            warnings.warn(f"straggler_probe: {disagreement}", RuntimeWarning, stacklevel=4)
        if (found.rank, found.world) != (self.identity.rank, self.identity.world):
            self.core.set_rank(found.rank, found.world)
        self.identity = found
        if self.collectives is not None:
            self.collectives.rank = found.rank
        return True

    def _maybe_start_transport(self, at_step: bool = False) -> None:
        """At init() only when the process group already exists; later, at each step boundary
        until it does (a job without torch.distributed: at the first one, as a single rank)."""
        if self.transport is not None:
            return
        if not self._settle_identity() and self.cfg.transport != "none":
            if not at_step or self.world > 1:
                return
        try:
            self.transport = _transport.start(self.core, self.cfg, self.rank, self.world,
                                              self.dist, self.session)
        except Exception as err:  # noqa: BLE001 - no transport: record nothing for nobody
            self.transport = "failed"
            self.step_aside(f"the transport did not start ({type(err).__name__}: {err})")

    # -- per step ---------------------------------------------------------------------------------
    def _on_step_marked(self) -> None:
        rec = self.rec
        if self.cfg.fault_inject == "record" and self.rank == 1 and rec.step == 5:
            raise RuntimeError("injected fault (STRAGGLER_PROBE_FAULT_INJECT=record)")
        if self.modules is not None:
            if rec.step == 1:
                self.modules.end_discovery()  # top-level modules are known after one step
            self.modules.new_step()
        if self.process_groups is not None:
            self.process_groups.at_step(rec.step - 1)
        self.sight.at_step(rec.step - 1)
        if self.transport is None:
            self._maybe_start_transport(at_step=True)
        elif rec.step % self.STATUS_EVERY == 0:
            state = self.core.pipeline_status().get("state")
            if state in ("stepped-aside", "stopped-by-another-rank"):
                self.step_aside(None)

    def _no_steps(self, forwards: int) -> None:
        self._settle_identity()
        if self.rank != 0:
            return
        how = ("straggler_probe.step() was never called (steps='manual')"
               if self.cfg.steps == "manual" else
               "no torch.optim optimizer stepped (steps='auto' ends a step at optimizer.step(); "
               "call straggler_probe.step() at the end of each step otherwise)")
        self.sight.problems.append(f"no step boundary after {forwards} forwards")
        warnings.warn(f"straggler_probe: {forwards} forwards have run and no step has ended: {how}; "
                      "until one does, nothing is analysed", RuntimeWarning, stacklevel=4)

    def collectives_seen(self) -> int:
        """Collectives and p2p ops this rank has recorded so far (every Python layer numbers them;
        the NCCL layer's, on groups left to it, by the groups' own counts)."""
        if self.collectives is None:
            return 0
        return self.collectives.groups.ops_numbered() + self.process_groups.native_ops()

    def manual_step(self) -> None:
        if self.optimizer is not None and self.optimizer.on_step_end is not None:
            self.optimizer.on_step_end = None  # the user marks steps from now on
        self.rec.end_step()

    def step_aside(self, warning: str | None) -> None:
        """Stop recording for good (the pipeline failed, or rank 0 asked): one warning at most."""
        if warning:
            warnings.warn(f"straggler_probe: {warning}; the probe steps aside and training "
                          "continues without it", RuntimeWarning, stacklevel=3)
        self._remove_hooks()
        self.rec.disable()  # hooks a thread is inside of right now return at once
        self.core.shutdown()

    # -- shut-down --------------------------------------------------------------------------------
    def _remove_hooks(self) -> None:
        while self._uninstall:
            undo = self._uninstall.pop()
            try:
                undo()
            except Exception:  # noqa: BLE001 - best effort: the process is on its way out
                pass

    def close(self, drain_s: float) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._remove_hooks()
        self.timer.close()
        self.core.shutdown()  # closes the marked steps: their summaries wait for the transport
        # rank 0: the pipeline writes the whole report once (clock offsets and GPU capture
        # included; rank_pipeline/src/pipeline/report_sections.h)
        self.core.stop_pipeline(drain_s)
        if self._hang_dump is not None:
            self._hang_dump.close()

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rank": self.rank, "world_size": self.world, "step": self.rec.step,
                               "transport": self.transport, "recording": not self.rec.failed}
        out["runtime"] = self.core.stats()
        out["recording_pause"] = self.core.pause_state()  # /control's pause and resume
        out["pipeline"] = self.core.pipeline_status()
        if self.gc is not None:
            out["gc_short_pauses"] = self.gc.short_pauses
        if self.process_groups is not None:
            out["process_groups"] = self.process_groups.stats()
        out["sight_problems"] = list(self.sight.problems)
        out["region_timer"] = type(self.timer).__name__
        if isinstance(self.timer, CudaEventTimer):
            out["cuda_regions_dropped"] = self.timer.dropped
        if self.ddp is not None:
            out["ddp"] = {"models": self.ddp.models_seen, "times_buckets": self.ddp.times_buckets,
                          "comm_hooks_registered": self.ddp.hooks_registered}
        from . import _profiler_guard
        out["profiler_guard"] = _profiler_guard.stats()
        return out


def register_exit(probe_getter: Callable[[], Probe | None], drain_s: Callable[[], float]) -> None:
    def at_exit() -> None:
        probe = probe_getter()
        if probe is not None:
            # The script died of an exception (typically a collective that failed because another
            # rank died): the other ranks are going too, and waiting for their last summaries
            # would only hold this exit up (issue 26). The report is still written.
            crashed = getattr(sys, "last_value", None) is not None
            probe.close(0.0 if crashed else drain_s())
    atexit.register(at_exit)
