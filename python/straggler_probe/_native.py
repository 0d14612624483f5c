"""The compiled core (straggler_probe._core) and the event vocabulary shared with it.

Constants mirror runtime/include/straggler_probe/probe.h; they go over the wire, so they are
checked against the extension's own values once at import (a stale build fails loudly).
"""
from __future__ import annotations

# sp_op_kind
FORWARD = 1
BACKWARD = 2
OPTIMIZER = 3
COLLECTIVE = 4
SEND = 5
RECV = 6
GC = 7
DATA_WAIT = 8
KERNEL = 9
MEMCPY = 10
OTHER = 11

# sp_coll_type
COLL_NONE = 0
COLL_ALL_REDUCE = 1
COLL_ALL_GATHER = 2
COLL_REDUCE_SCATTER = 3
COLL_BROADCAST = 4
COLL_REDUCE = 5
COLL_ALL_TO_ALL = 6
COLL_BARRIER = 7
COLL_SEND = 8
COLL_RECV = 9
COLL_GATHER = 10
COLL_SCATTER = 11

# sp_time_source
TIME_CPU = 0
TIME_CUDA_EVENT = 1

# Logical streams of the Python probe (sp_event.stream). Ops on one stream run one after another;
# docs/PYTHON.md ("Event conventions") says what each holds and why.
STREAM_MAIN = 0        # the training thread: data wait, forward, backward, optimizer, blocking calls
STREAM_ASYNC_COMM = 1  # collectives launched async (DDP buckets, async_op=True)
STREAM_P2P_SEND = 2    # pipeline sends
STREAM_P2P_RECV = 3    # pipeline receives
STREAM_GC = 4          # GC pauses: they overlap whatever the thread was doing
STREAM_CPU_WAIT = 5   # data waits when regions are CUDA-timed (CPU and GPU time differ)

try:
    from . import _core  # type: ignore[attr-defined]
except ImportError as err:  # pragma: no cover - only when the package was not built
    _core = None
    IMPORT_ERROR: str | None = (f"straggler_probe._core is not built ({err}); "
                                "build with `pip install .` or scripts/test.sh")
else:
    IMPORT_ERROR = None
    _expected = {"FORWARD": FORWARD, "BACKWARD": BACKWARD, "OPTIMIZER": OPTIMIZER,
                 "COLLECTIVE": COLLECTIVE, "SEND": SEND, "RECV": RECV, "GC": GC,
                 "DATA_WAIT": DATA_WAIT, "OTHER": OTHER}
    for _name, _value in _expected.items():
        if getattr(_core, "OP_" + _name) != _value:
            raise ImportError(f"straggler_probe._core disagrees on OP_{_name}: rebuild the package")

core = _core
