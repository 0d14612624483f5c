"""Collective kinds by the names torch gives them (ProcessGroup methods, HookOpName values):
(sp_op_kind, sp_coll_type) for any spelling."""
from __future__ import annotations

import re

from .. import _native as N

# Collective kinds by name, for any spelling torch uses (ALLGATHER_BASE, all_gather_single,
# _reduce_scatter_base, allgather_into_tensor_coalesced...): order matters (all-reduce before reduce).
_PATTERNS: list[tuple[str, int, int]] = [
    ("reducescatter", N.COLLECTIVE, N.COLL_REDUCE_SCATTER),
    ("allreduce", N.COLLECTIVE, N.COLL_ALL_REDUCE),
    ("allgather", N.COLLECTIVE, N.COLL_ALL_GATHER),
    ("alltoall", N.COLLECTIVE, N.COLL_ALL_TO_ALL),
    ("broadcast", N.COLLECTIVE, N.COLL_BROADCAST),
    ("barrier", N.COLLECTIVE, N.COLL_BARRIER),
    ("send", N.SEND, N.COLL_SEND),
    ("recv", N.RECV, N.COLL_RECV),
    ("gather", N.COLLECTIVE, N.COLL_GATHER),
    ("scatter", N.COLLECTIVE, N.COLL_SCATTER),
    ("reduce", N.COLLECTIVE, N.COLL_REDUCE),
]
METHOD_NAME = re.compile(r"^_?(all_?reduce|all_?gather|reduce_scatter|all_?to_?all|alltoall|"
                          r"broadcast|barrier|monitored_barrier|gather|scatter|reduce|send|recv)")


def classify(name: str) -> tuple[int, int] | None:
    """(kind, coll) of a collective named any way torch names one; None if it is not one."""
    flat = name.lower().replace("_", "").replace("monitored", "")
    for pattern, kind, coll in _PATTERNS:
        if pattern in flat:
            return kind, coll
    return None
