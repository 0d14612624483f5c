"""The CUDA-event resolver of python/straggler_probe/_timing.py against a stand-in torch with
devices (no GPU needed): issue 11's three failure modes.

- A new thread's current device is 0: the resolver must work on the rank's device, or its
  re-anchor lands on GPU 0 and elapsed_time across devices fails for every later region.
- One failure must not end all later regions.
- While a thread captures a CUDA graph (global mode), another thread's event query invalidates
  the capture: the resolver queries nothing until the capture ends, and the runtime is told.
"""
from __future__ import annotations

import threading
import time

from straggler_probe import _native as N
from straggler_probe._timing import CudaEventTimer


class _Devices(threading.local):
    current = 0


class _FakeCuda:
    """torch.cuda with per-thread current devices, events that belong to a device, and
    elapsed_time that refuses to compare two devices (as torch does)."""

    def __init__(self, device_count: int = 8):
        self._devices = _Devices()
        self._count = device_count
        self.queries = 0
        self.fail_next_query = False
        cuda = self

        class Event:
            def __init__(self, enable_timing: bool = False):
                self.t = None
                self.device = None

            def record(self) -> None:
                self.t = time.time_ns()
                self.device = cuda.current_device()

            def query(self) -> bool:
                cuda.queries += 1
                if cuda.fail_next_query:
                    cuda.fail_next_query = False
                    raise RuntimeError("CUDA error: an illegal memory access was encountered")
                return self.t is not None

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, other: "Event") -> float:
                if self.device != other.device:
                    raise RuntimeError("Both events must be recorded on the same device")
                return (other.t - self.t) / 1e6

        class CUDAGraph:
            def capture_begin(self, *args, **kwargs) -> None:
                self.capturing = True

            def capture_end(self) -> None:
                self.capturing = False

        self.Event = Event
        self.CUDAGraph = CUDAGraph

    def current_device(self) -> int:
        return self._devices.current

    def set_device(self, d: int) -> None:
        self._devices.current = d

    def device_count(self) -> int:
        return self._count

    class _Guard:
        def __init__(self, cuda: "_FakeCuda", d: int):
            self.cuda, self.d, self.prev = cuda, d, None

        def __enter__(self):
            self.prev = self.cuda.current_device()
            self.cuda.set_device(self.d)

        def __exit__(self, *exc):
            self.cuda.set_device(self.prev)

    def device(self, d: int) -> "_FakeCuda._Guard":
        return self._Guard(self, d)


class _FakeTorch:
    def __init__(self):
        self.cuda = _FakeCuda()


def _wait_for(cond, timeout: float = 3.0) -> bool:
    deadline = time.time() + timeout
    while not cond() and time.time() < deadline:
        time.sleep(0.005)
    return cond()


def _region(timer: CudaEventTimer, step: int) -> None:
    start = timer.stamp()
    end = timer.stamp()
    timer.submit(N.FORWARD, start, end, 0, 0, N.STREAM_MAIN, step)


def test_the_resolver_works_on_the_ranks_device_not_device_0():
    torch = _FakeTorch()
    torch.cuda.set_device(3)  # the training thread: torch.cuda.set_device(LOCAL_RANK)
    recorded = []
    timer = CudaEventTimer(lambda *a: recorded.append(a), torch)
    timer.ANCHOR_EVERY_S = 0.02  # re-anchor on the resolver thread, often
    assert timer.device == 3
    for step in range(20):
        _region(timer, step)
        time.sleep(0.005)
    assert _wait_for(lambda: len(recorded) == 20)
    timer.close()
    assert timer.failed == 0, "no elapsed_time across devices"
    assert timer._anchor[0].device == 3, "the re-anchor is on the rank's device"


def test_without_set_device_the_rank_device_is_local_rank(monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "5")
    torch = _FakeTorch()
    timer = CudaEventTimer(lambda *a: None, torch)
    timer.close()
    assert timer.device == 5


def test_one_failure_costs_one_region_not_every_later_one():
    import warnings

    torch = _FakeTorch()
    recorded = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        timer = CudaEventTimer(lambda *a: recorded.append(a), torch)
        torch.cuda.fail_next_query = True
        _region(timer, 0)
        assert _wait_for(lambda: timer.failed == 1)
        for step in range(1, 6):
            _region(timer, step)
        assert _wait_for(lambda: len(recorded) == 5)
        timer.close()
    assert timer.failed == 1
    assert [r[-1] for r in recorded] == [2, 3, 4, 5, 6], "later regions, each with its step"
    assert sum("could not be timed" in str(w.message) for w in caught) == 1


def test_no_query_while_a_graph_is_captured_and_the_runtime_is_told():
    torch = _FakeTorch()
    told = []
    recorded = []
    timer = CudaEventTimer(lambda *a: recorded.append(a), torch, on_capture=told.append)
    graph = torch.cuda.CUDAGraph()
    graph.capture_begin()
    assert timer.capture.underway()
    _region(timer, 0)
    before = torch.cuda.queries
    time.sleep(0.1)  # some twenty resolver rounds
    assert torch.cuda.queries == before, "no event query during the capture"
    assert recorded == []
    graph.capture_end()
    assert _wait_for(lambda: len(recorded) == 1), "resolved once the capture ended"
    timer.close()
    assert told == [True, False]
    assert timer.capture.captures == 1
    assert torch.cuda.CUDAGraph.capture_begin is not None
    assert not hasattr(torch.cuda.CUDAGraph.capture_begin, "__wrapped__"), "unwrapped at close"
