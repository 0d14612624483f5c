"""A small GPT (decoder-only transformer) for the demo: a few layers, a tiny vocabulary, and
synthetic token streams made on the fly, so the demo needs no download."""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d_model: int, n_head: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model))
        self.n_head = n_head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab: int = 256, d_model: int = 64, n_head: int = 4, n_layer: int = 2,
                 block: int = 64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(block, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.head.weight = self.tok.weight  # weight tying, as in GPT-2
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * n_layer))

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


class SyntheticTokens(torch.utils.data.Dataset):
    """(input, target) pairs from a fixed random 'language' (a Markov chain with 4 successors per
    token), so that the loss actually goes down; generated once up front, seeded per rank."""

    def __init__(self, vocab: int, block: int, seed: int, size: int = 2048):
        g = torch.Generator().manual_seed(seed)
        table = torch.randint(0, vocab, (vocab, 4), generator=torch.Generator().manual_seed(7))
        seqs = torch.empty(size, block + 1, dtype=torch.long)
        seqs[:, 0] = torch.randint(0, vocab, (size,), generator=g)
        choice = torch.randint(0, 4, (size, block), generator=g)
        for i in range(block):
            seqs[:, i + 1] = table[seqs[:, i], choice[:, i]]
        self.seqs = seqs

    def __len__(self) -> int:
        return len(self.seqs)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.seqs[i, :-1], self.seqs[i, 1:]
