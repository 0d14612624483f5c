"""The GPT-style model of the GPU checks (gpt, overhead, live) and one training step of it.

It imports torch only (never straggler_probe): the overhead check's baseline arm runs it in a
process that never loads the probe. The loss is computed inside the model's forward, so that a
step is forward (the DDP model's call), backward and optimizer step and nothing else: every
kernel of a step belongs to one of the probe's three regions.

Sizes: "gpt" is the first GPU check's model (8 layers, d=1024, 16 heads, seq 512, vocab 32000;
batch 8 makes a launch-bound ~25 ms step on an H200); "live" a small one for 4 ranks sharing one
GPU over gloo (its gradients cross the host every step); "smoke" tiny CPU shapes.
"""
from __future__ import annotations

import os
import time

SIZES = {  # d, heads, layers, seq, vocab
    "gpt": (1024, 16, 8, 512, 32000),
    "live": (128, 4, 8, 128, 1024),
    "smoke": (64, 4, 2, 32, 512),
}


def build_gpt(size: str, extra_forward: int = 0):
    import torch
    import torch.nn as nn
    d, heads, layers, seq, vocab = SIZES[size]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
            return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)
            self.extra_forward = extra_forward  # the live check's slow rank: more forward work

        def body(self, x):
            for blk in self.blocks:
                x = blk(x)
            return x

        def forward(self, idx):
            x = self.emb(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
            if self.extra_forward:
                with torch.no_grad():
                    for _ in range(self.extra_forward):
                        self.body(x.detach())
            logits = self.head(self.ln(self.body(x)))
            return nn.functional.cross_entropy(logits.view(-1, vocab).float(), idx.view(-1))

    return GPT(), vocab, seq


class Trainer:
    """DDP over the current process group (made here if there is none), AdamW (fused on CUDA),
    fixed synthetic tokens on the device. step(ev) runs one step; ev, if given, is called with
    a label at the region boundaries ("f0", "f1", "b0", "b1", "o0", "o1"): b1 from an autograd
    final callback queued at the backward's first node, i.e. where the engine has run the graph,
    before DDP's wait for its buckets (where the probe ends its backward region too)."""

    def __init__(self, size: str, batch: int, cuda: bool, backend: str | None = None,
                 extra_forward: int = 0, seed: int = 0):
        import torch
        import torch.distributed as dist
        self.torch = torch
        self.cuda = cuda
        self.dev = "cuda" if cuda else "cpu"
        if cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
        if not dist.is_initialized():
            dist.init_process_group(backend or ("nccl" if cuda else "gloo"))
        torch.manual_seed(seed)
        model, self.vocab, seq = build_gpt(size, extra_forward)
        self.model = torch.nn.parallel.DistributedDataParallel(model.to(self.dev))
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4, fused=cuda)
        self.idx = torch.randint(0, self.vocab, (batch, seq), device=self.dev)
        self._queue = getattr(getattr(torch.autograd, "graph", None), "queue_callback", None) or \
            torch.autograd.Variable._execution_engine.queue_callback

    def step(self, ev=None) -> None:
        torch = self.torch
        if ev is not None:
            ev("f0")
        with torch.autocast(self.dev, dtype=torch.bfloat16, enabled=self.cuda):
            loss = self.model(self.idx)
        if ev is not None:
            ev("f1")
            ev("b0")
            loss.grad_fn.register_prehook(lambda _g: self._queue(lambda: ev("b1")))
        loss.backward()
        if ev is not None:
            ev("o0")
        self.opt.step()
        if ev is not None:
            ev("o1")
        self.opt.zero_grad(set_to_none=True)

    def timed_step(self) -> float:
        """One step, synchronised at its end (as a loop that logs its loss is): its wall ms."""
        t0 = time.perf_counter()
        self.step()
        if self.cuda:
            self.torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1000
