"""What the GPU checks share: the RESULT line, the rank environment of a one-process job, and a
ctypes view of the NCCL library torch loaded (to issue operations torch has no API for)."""
from __future__ import annotations

import ctypes
import json
import os
import time


def result(ok: bool | None, **fields) -> int:
    """Prints the check's one RESULT line; exit status 0 pass, 1 fail, 2 could not run."""
    fields["ok"] = ok
    print("RESULT " + json.dumps(fields, sort_keys=True, default=str), flush=True)
    return 0 if ok else (2 if ok is None else 1)


def set_rank_env() -> None:
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("LOCAL_RANK", "0")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))


def wait_flushed(flush, rounds: int = 3, pause_s: float = 0.7) -> None:
    # Parsed records wait one window for late correlations, regions one more to be complete.
    for _ in range(rounds):
        flush()
        time.sleep(pause_s)


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
        operation that runs NCCL's kernel path (with profiler P2p and KernelCh events); one-rank
        collectives become copies or a plain kernel launch without profiler events."""
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
