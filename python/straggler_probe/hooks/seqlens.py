"""Sequence lengths of a micro-batch, taken from the inputs where they are unambiguous.

- cu_seqlens (packed varlen batches, flash-attention style): the exact lengths, its differences.
- attention_mask [batch, seq] of 0/1: row sums, the lengths of a padded batch. (A packed batch
  with an all-ones mask looks like one long sequence per row: pass annotate(seq_lens=...) then.)
Only CPU tensors are read: reading a GPU tensor would synchronise the training thread.
"""
from __future__ import annotations

from typing import Any

_CU_KEYS = ("cu_seqlens", "cu_seqlens_q", "cu_seq_lens_q", "cu_seq_lens")
_MASK_KEYS = ("attention_mask",)
MAX_LENGTHS = 4096  # longer lists are truncated in the annotation: the analysis needs sum(s^2)


def _is_cpu_int_tensor(t: Any, ndim: int) -> bool:
    return (hasattr(t, "dim") and t.dim() == ndim and getattr(t, "device", None) is not None
            and t.device.type == "cpu" and not t.is_floating_point() and t.numel() > 0)


def from_mapping(m: Any) -> list[int] | None:
    if not isinstance(m, dict):
        return None
    for key in _CU_KEYS:
        t = m.get(key)
        if t is not None and _is_cpu_int_tensor(t, 1) and t.numel() >= 2:
            lens = (t[1:] - t[:-1]).tolist()
            if all(x >= 0 for x in lens):
                return [int(x) for x in lens if x > 0]
    for key in _MASK_KEYS:
        t = m.get(key)
        if t is not None and _is_cpu_int_tensor(t, 2):
            flat = t.reshape(-1)
            if bool(((flat == 0) | (flat == 1)).all()):  # a 0/1 mask, not an additive one
                return [int(x) for x in t.sum(dim=1).tolist()]
    return None


def from_call(args: tuple, kwargs: dict) -> list[int] | None:
    """forward(**batch) or forward(batch) with a dict batch."""
    found = from_mapping(kwargs) if kwargs else None
    if found is None and args and isinstance(args[0], dict):
        found = from_mapping(args[0])
    return found


def encode(lengths: list[int]) -> str:
    return ",".join(str(int(x)) for x in lengths[:MAX_LENGTHS])
