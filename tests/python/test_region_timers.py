"""Issue 22: which clock times the regions of a CUDA job, and what it costs the training thread.

- GPU capture (CUPTI) active: no CUDA event at all, CPU stamps, the GPU region tags pushed and
  popped (CUPTI's spans time the regions in the analysis), no resolver thread.
- Not active: CUDA events, pooled (none made per region after warm-up), and the resolver thread
  starts at the first region and sleeps while nothing is pending (no 5 ms poll taking the GIL).
The stand-in torch with devices of test_timing.py; no GPU needed.
"""
from __future__ import annotations

import time
import types

from test_timing import _FakeTorch, _region, _wait_for

from straggler_probe import _native as N
from straggler_probe._config import Config
from straggler_probe._probe import Probe
from straggler_probe._timing import CudaEventTimer, CuptiRegionTimer, GpuRegionTags, CpuTimer


class _FakeCore:
    def __init__(self, capture_active: bool):
        self.active = capture_active
        self.recorded: list[tuple] = []
        self.tags: list = []

    def record(self, *args):  # noqa: ANN002
        self.recorded.append(args)

    def has_gpu_capture(self) -> bool:
        return True

    def cupti_start(self) -> bool:
        return self.active

    def cupti_stats(self) -> dict:
        return {"active": self.active, "paused": False}

    def cupti_region_push(self, kind: int, mb: int, name_id: int) -> bool:
        self.tags.append(("push", kind, mb, name_id))
        return True

    def cupti_region_pop(self) -> None:
        self.tags.append(("pop",))

    def gpu_graph_capture(self, begin: bool) -> bool:
        return True


def _choose(capture_active: bool, cuda_events: str = "auto"):
    torch = _FakeTorch()
    torch.cuda.is_available = lambda: True
    torch.cuda.is_initialized = lambda: True
    made = []
    event_cls = torch.cuda.Event

    def counting_event(*a, **k):  # noqa: ANN002, ANN003, ANN202
        made.append(1)
        return event_cls(*a, **k)

    torch.cuda.Event = counting_event
    core = _FakeCore(capture_active)
    probe = types.SimpleNamespace(torch=torch, cfg=Config(cuda_events=cuda_events), core=core,
                                  rec=types.SimpleNamespace(timer=CpuTimer(core.record), gpu=None),
                                  timer=None)
    probe._start_gpu_capture = lambda: Probe._start_gpu_capture(probe)
    Probe._choose_timer(probe)
    return probe, core, made


def test_with_gpu_capture_regions_take_host_stamps_and_tags_no_cuda_event():
    probe, core, made = _choose(capture_active=True)
    timer = probe.rec.timer
    assert isinstance(timer, CuptiRegionTimer) and timer.is_cuda
    assert isinstance(probe.rec.gpu, GpuRegionTags)
    start = timer.stamp()
    timer.submit(N.FORWARD, start, timer.stamp(), 0, 0, N.STREAM_MAIN, 3)
    assert made == [], "no CUDA event made"
    assert isinstance(start, int) and core.recorded[-1][0] == N.FORWARD
    assert core.recorded[-1][12] == N.TIME_CPU, "CPU time; CUPTI's span supersedes it"
    probe.rec.gpu.push(N.FORWARD, 0)
    probe.rec.gpu.pop(N.FORWARD)
    assert core.tags == [("push", N.FORWARD, 0, 0), ("pop",)]
    timer.close()


def test_without_gpu_capture_cuda_events_and_the_on_setting_keeps_them():
    for active, setting in ((False, "auto"), (True, "on")):
        probe, _, _ = _choose(capture_active=active, cuda_events=setting)
        assert isinstance(probe.rec.timer, CudaEventTimer), (active, setting)
        assert (probe.rec.gpu is not None) == active, "tags whenever the capture is active"
        probe.rec.timer.close()
    probe, _, _ = _choose(capture_active=False, cuda_events="off")
    assert isinstance(probe.rec.timer, CpuTimer)


def test_resolver_starts_at_the_first_region_and_sleeps_while_idle():
    torch = _FakeTorch()
    recorded = []
    timer = CudaEventTimer(lambda *a: recorded.append(a), torch)
    assert timer._thread is None, "no thread before a region is pending"
    made_before = len(timer._pool)
    for step in range(3):
        _region(timer, step)
    assert _wait_for(lambda: len(recorded) == 3)
    assert timer._thread is not None and timer._thread.is_alive()
    time.sleep(0.02)  # let it go back to sleep
    queries = torch.cuda.queries
    time.sleep(0.15)  # some 30 poll periods
    assert torch.cuda.queries == queries, "no event queried while nothing is pending"
    assert _wait_for(lambda: len(timer._pool) == made_before), "events back in the pool"
    for step in range(3, 40):  # later steps reuse the pooled events
        _region(timer, step)
    assert _wait_for(lambda: len(recorded) == 40)
    timer.close()
    assert not timer._thread.is_alive()


def test_close_without_any_region_has_no_thread_to_join():
    timer = CudaEventTimer(lambda *a: None, _FakeTorch())
    timer.close()
    assert timer._thread is None
