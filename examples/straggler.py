"""Per-rank compute time for the demo: an emulated accelerator, and the injected straggler.

On a real cluster every rank computes on its own accelerator while its CPU thread mostly waits.
Here four ranks share two CPU cores, so their real CPU compute contends for the cores and the
scheduler alone makes random ranks late by more than the 30% we inject. The demo therefore gives
each rank an emulated accelerator: the model's real (small) CPU forward/backward, plus a fixed
device time per micro-batch spent waiting (--device-ms; forward x1, backward x2). The straggler's
extra time (--slowdown of everything it computes, sized from its own recent measurements) is
spent the same way. --device-ms 0 --busy turns both off and burns real CPU instead.
"""
from __future__ import annotations

import time

import torch

BUSY = False  # set by the demo's --busy: extra time is real CPU work


def spend(seconds: float) -> None:
    """About `seconds` of wall time: waiting on the device, or real compute (BUSY)."""
    if seconds <= 0:
        return
    if not BUSY:
        time.sleep(seconds)
        return
    a = torch.randn(64, 64)
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        a = torch.tanh(a @ a)


class DeviceTime(torch.autograd.Function):
    """Identity on the loss whose forward and backward take the rank's device time."""

    @staticmethod
    def forward(ctx, x, rank_time):  # noqa: ANN001
        spend(rank_time.forward_s())
        ctx.rank_time = rank_time
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001
        spend(ctx.rank_time.backward_s())
        return grad, None


class RankTime:
    """This rank's device time per micro-batch, and its slowdown (0 on healthy ranks)."""

    def __init__(self, device_ms: float, slowdown: float):
        self.device_s = device_ms / 1e3
        self.slowdown = slowdown
        self.cpu_fwd_s = 0.0  # the model's measured CPU time (exponential average)
        self.cpu_bwd_s = 0.0

    def forward_s(self) -> float:
        return self.device_s * (1 + self.slowdown) + self.slowdown * self.cpu_fwd_s

    def backward_s(self) -> float:
        return 2 * self.device_s * (1 + self.slowdown) + self.slowdown * self.cpu_bwd_s

    def observe(self, fwd_s: float, bwd_s: float) -> None:
        """Measured forward/backward wall times, from which the CPU part is recovered."""
        cpu_fwd = max(0.0, fwd_s - self.forward_s())
        cpu_bwd = max(0.0, bwd_s - self.backward_s())
        a = 0.3 if self.cpu_fwd_s else 1.0
        self.cpu_fwd_s += a * (cpu_fwd - self.cpu_fwd_s)
        self.cpu_bwd_s += a * (cpu_bwd - self.cpu_bwd_s)

    def apply(self, loss: torch.Tensor) -> torch.Tensor:
        return DeviceTime.apply(loss, self)


class OnDevice(torch.nn.Module):
    """The model plus its device time, inside one forward (as a GPU kernel would be)."""

    def __init__(self, model: torch.nn.Module, rank_time: RankTime):
        super().__init__()
        self.model = model
        self.rank_time = rank_time

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return self.rank_time.apply(self.model(*args))


def endless(loader):  # noqa: ANN001, ANN201
    """The loader's batches, epoch after epoch."""
    while True:
        yield from loader


def train_step(model, opt, rank_time: RankTime, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
    """One training step; its measured forward and backward times tell `rank_time` the CPU part."""
    t0 = time.perf_counter()
    loss = model(x, y)
    t1 = time.perf_counter()
    loss.backward()
    t2 = time.perf_counter()
    opt.step()
    opt.zero_grad(set_to_none=True)
    rank_time.observe(t1 - t0, t2 - t1)
    return loss
