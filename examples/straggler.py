"""Injected straggler for the demo: makes one rank's compute a set fraction slower, inside its
forward and backward, sized from the rank's own recent forward/backward times.

The extra time is spent waiting, as on a slow accelerator: on a real cluster each rank computes
on its own device, but here four ranks share two CPU cores, and extra *CPU* work on one rank would
take cores from the others and slow them all (a different experiment). --busy spends it in real
matrix products instead.
"""
from __future__ import annotations

import time

import torch


BUSY = False  # set by the demo's --busy


def spin(seconds: float) -> None:
    """About `seconds` of wall time: waiting (a slow device) or real compute (BUSY)."""
    if seconds <= 0:
        return
    if not BUSY:
        time.sleep(seconds)
        return
    a = torch.randn(64, 64)
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        a = torch.tanh(a @ a)


class ExtraWork(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, injector):  # noqa: ANN001
        spin(injector.factor * injector.fwd_s)
        ctx.injector = injector
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):  # noqa: ANN001
        spin(ctx.injector.factor * ctx.injector.bwd_s)
        return grad, None


class Injector:
    """Measures this rank's forward and backward (exponential average) and adds factor x that."""

    def __init__(self, factor: float):
        self.factor = factor
        self.fwd_s = 0.0
        self.bwd_s = 0.0

    def observe(self, fwd_s: float, bwd_s: float) -> None:
        # the measured times include the extra work: take it out again
        fwd_s /= 1 + self.factor
        bwd_s /= 1 + self.factor
        a = 0.3 if self.fwd_s else 1.0
        self.fwd_s += a * (fwd_s - self.fwd_s)
        self.bwd_s += a * (bwd_s - self.bwd_s)

    def apply(self, loss: torch.Tensor) -> torch.Tensor:
        return ExtraWork.apply(loss, self)
