"""Where the probe's per-step cost goes: the launch-bound job of step_cost.py in ONE process,
with the probe off and on under several settings, interleaved block by block (init() / shutdown()
between blocks), so that each setting's added microseconds per step can be told apart (a
separate-process A/B, step_cost.py, cannot resolve 10 µs). Reports, per setting, the median step
(wall and training-thread CPU) and the added time against the off blocks.

Usage: flock /tmp/sp-heavy.lock .venv/bin/python bench/step_cost/attribute.py [--variant single]
       [--blocks 12] [--steps 40]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from step_cost import build_job, timed_step  # noqa: E402

# setting name -> init() keywords (None: the probe is not running in that block)
SETTINGS: dict[str, dict | None] = {
    "off": None,
    "defaults": {},
    "transport=none": {"transport": "none"},
    "gc=0": {"gc": False},
    "dataloader=0": {"dataloader": False},
    "collectives=0": {"collectives": False},
    "seq_lens=off": {"seq_lens": "off"},
    "modules=0": {"modules": False},
}


def tiny_job():
    """A step of framework overhead only (~0.3 ms: one Linear(8, 8), a data loader, SGD), where
    the probe's added microseconds per step stand out of the machine's noise."""
    import torch

    torch.set_num_threads(1)

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x, y):  # noqa: ANN001, ANN201
            return (self.lin(x) - y).pow(2).mean()

    model = Tiny()
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(
        torch.randn(4096, 8), torch.randn(4096, 8)), batch_size=4)
    return model, None, torch.optim.SGD(model.parameters(), lr=1e-3), data


def run(variant: str, blocks: int, steps: int, settings: list[str]) -> dict:
    import straggler_probe

    model, _, opt, data = tiny_job() if variant == "tiny" else build_job(variant, seed=0)
    it = iter(data)
    out = tempfile.mkdtemp(prefix="sp-attr-")
    wall: dict[str, list[int]] = {s: [] for s in settings}
    cpu: dict[str, list[int]] = {s: [] for s in settings}
    for _ in range(blocks):
        for name in settings:
            kwargs = SETTINGS[name]
            if kwargs is not None:
                straggler_probe.init(out_dir=out, log_lines=False, **kwargs)
            for k in range(steps):
                it, dt_wall, dt_cpu = timed_step(model, opt, data, it)
                if k >= 10:  # the first steps after a switch pay for start-up (hook discovery)
                    wall[name].append(dt_wall)
                    cpu[name].append(dt_cpu)
            if kwargs is not None:
                straggler_probe.shutdown()
    return {n: (statistics.median(wall[n]), statistics.median(cpu[n])) for n in settings}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", default="single", choices=["single", "ddp", "tiny"])
    ap.add_argument("--blocks", type=int, default=12)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    args = ap.parse_args()
    settings = ["off"] + [s for s in args.settings if s != "off"]
    res = run(args.variant, args.blocks, args.steps, settings)
    off_wall, off_cpu = res["off"]
    print(f"{args.variant}: {args.blocks} blocks x {args.steps} steps per setting")
    print("| setting | step wall (µs) | added wall (µs) | step thread CPU (µs) | added CPU (µs) |")
    print("| --- | --- | --- | --- | --- |")
    for name in settings:
        w, c = res[name]
        print(f"| {name} | {w / 1e3:.0f} | {(w - off_wall) / 1e3:+.0f} | {c / 1e3:.0f} | "
              f"{(c - off_cpu) / 1e3:+.0f} |")


if __name__ == "__main__":
    main()
