"""What the GPU checks share: the RESULT line, the rank environment of a one-process job, waiting
for CUPTI's records, statistics (t interval of paired log ratios), capturing this process's own
stdout/stderr (NCCL's and the probe's log lines), and a ctypes view of the NCCL library torch
loaded (to issue operations torch has no API for)."""
from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import socket
import statistics
import sys
import tempfile
import time
from typing import Callable, Iterator


def result(ok: bool | None, **fields) -> int:
    """Prints the check's one RESULT line; exit status 0 pass, 1 fail, 2 could not run."""
    fields["ok"] = ok
    print("RESULT " + json.dumps(fields, sort_keys=True, default=str), flush=True)
    return 0 if ok else (2 if ok is None else 1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def set_rank_env() -> None:
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("LOCAL_RANK", "0")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))


def wait_settled(flush: Callable[[], None], read: Callable[[], object], max_s: float = 3.0,
                 pause_s: float = 0.25) -> float:
    """Asks for flushes until what `read` returns stops changing twice in a row (CUPTI's buffers
    parsed, activities waiting for a later marker decided, quiet regions emitted), at most
    max_s. Returns the seconds it took."""
    t0 = time.monotonic()
    last, same = None, 0
    while time.monotonic() - t0 < max_s:
        flush()
        time.sleep(pause_s)
        now = read()
        same = same + 1 if now == last else 0
        last = now
        if same >= 2:
            break
    return round(time.monotonic() - t0, 2)


# Two-sided 95% t quantiles by degrees of freedom (a larger dof uses the next smaller entry).
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120,
        18: 2.101, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def t95(dof: int) -> float:
    keys = [k for k in sorted(_T95) if k <= dof]
    return _T95[keys[-1]] if keys else float("inf")


def ratio_interval(pairs: list[tuple[float, float]]) -> dict:
    """pairs of (treated, baseline) per round: the geometric-mean ratio treated/baseline with a 95%
    t interval over the per-round log ratios."""
    logs = [math.log(b / a) for b, a in pairs if a > 0 and b > 0]
    n = len(logs)
    if n == 0:
        return {"rounds": 0}
    mean = statistics.fmean(logs)
    half = t95(n - 1) * statistics.stdev(logs) / math.sqrt(n) if n > 1 else float("inf")
    return {"rounds": n, "ratio": round(math.exp(mean), 5),
            "ci95": [round(math.exp(mean - half), 5),
                     round(math.exp(mean + half), 5) if math.isfinite(half) else None],
            "round_ratios": [round(math.exp(x), 4) for x in logs]}


@contextlib.contextmanager
def captured_output(sink: list[str]) -> Iterator[None]:
    """Sends this process's fd 1 and 2 (C libraries' output: NCCL_DEBUG, the probe's log) to a
    temporary file for the block, then appends its text to `sink` and echoes it to stderr."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            text = tmp.read().decode(errors="replace")
            sink.append(text)
            sys.stderr.write(text[-6000:])
            sys.stderr.flush()


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


class Nccl:
    """The libnccl.so.2 in this process (torch's), called directly. Entry points are looked up in
    the global scope, so a preloaded interposer's nccl* are the ones called, as for any caller."""

    NCCL_FLOAT32, NCCL_AVG = 7, 4

    def __init__(self):
        path = next((line.split()[-1] for line in open("/proc/self/maps")
                     if "libnccl.so" in line), None)
        if path is None:
            raise RuntimeError("libnccl.so.2 is not loaded (torch without NCCL?)")
        self.path = path
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        self.lib = ctypes.CDLL(None)  # the global scope: LD_PRELOAD first
        self.comm = ctypes.c_void_p()

    def version(self) -> int:
        v = ctypes.c_int()
        self.lib.ncclGetVersion(ctypes.byref(v))
        return v.value

    def init_one_rank(self) -> None:
        uid = UniqueId()
        self._check(self.lib.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
        self._check(self.lib.ncclCommInitRank(ctypes.byref(self.comm), 1, uid, 0),
                    "ncclCommInitRank")

    def send_recv_self(self, src_ptr: int, dst_ptr: int, count: int, stream: int) -> None:
        """A send to and a receive from this rank in one group: at one rank the only NCCL
        operation that runs NCCL's kernel path; one-rank collectives become copies or a plain
        kernel launch without profiler events."""
        lib = self.lib
        c, s = self.comm, ctypes.c_void_p(stream)
        self._check(lib.ncclGroupStart(), "ncclGroupStart")
        self._check(lib.ncclSend(ctypes.c_void_p(src_ptr), ctypes.c_size_t(count),
                                 self.NCCL_FLOAT32, 0, c, s), "ncclSend")
        self._check(lib.ncclRecv(ctypes.c_void_p(dst_ptr), ctypes.c_size_t(count),
                                 self.NCCL_FLOAT32, 0, c, s), "ncclRecv")
        self._check(lib.ncclGroupEnd(), "ncclGroupEnd")

    def destroy(self) -> None:
        if self.comm.value:
            self.lib.ncclCommDestroy(self.comm)
            self.comm = ctypes.c_void_p()

    @staticmethod
    def _check(rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"{what} returned {rc}")
