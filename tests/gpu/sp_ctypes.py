"""ctypes view of libstraggler_probe.so's C entry points used by the GPU checks.

The checks run with the library in LD_PRELOAD (or load it here): ctypes.CDLL on the same path
returns the copy already in the process, so these calls reach the very instance that records.
"""
from __future__ import annotations

import ctypes
import os


class SpEvent(ctypes.Structure):
    _fields_ = [("start_ns", ctypes.c_uint64), ("end_ns", ctypes.c_uint64),
                ("group_id", ctypes.c_uint64), ("seq", ctypes.c_uint64),
                ("bytes", ctypes.c_uint64), ("kind", ctypes.c_uint32), ("coll", ctypes.c_uint32),
                ("microbatch", ctypes.c_int32), ("peer", ctypes.c_int32),
                ("group_size", ctypes.c_int32), ("stream", ctypes.c_uint32),
                ("name_id", ctypes.c_uint32), ("time_source", ctypes.c_uint32),
                ("step_plus_one", ctypes.c_uint64)]


class CuptiStats(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("active", ctypes.c_int32),
                ("paused", ctypes.c_int32), ("cupti_major", ctypes.c_int32),
                ("windows", ctypes.c_uint64), ("kernels", ctypes.c_uint64),
                ("memcpys", ctypes.c_uint64), ("tagged_activities", ctypes.c_uint64),
                ("untagged_activities", ctypes.c_uint64), ("nccl_kernels", ctypes.c_uint64),
                ("dropped_records", ctypes.c_uint64), ("buffers_refused", ctypes.c_uint64),
                ("events_emitted", ctypes.c_uint64), ("clock_skew_ppm", ctypes.c_double),
                ("clock_offset_ns", ctypes.c_int64), ("clock_uncertainty_ns", ctypes.c_uint64),
                ("time_base_changes", ctypes.c_uint32), ("pauses", ctypes.c_uint32)]


class NcclStats(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("plugin_active", ctypes.c_uint32)] + [
        (n, ctypes.c_uint64) for n in (
            "recorded", "folded_groups", "passthrough", "failed_calls", "graph_captured",
            "in_progress", "steps_marked", "cuda_event_timed", "cuda_event_fallbacks",
            "plugin_contexts", "plugin_ops", "plugin_ops_gpu_timed", "plugin_ops_swept",
            "plugin_ce_ops", "plugin_graph_ops", "plugin_graph_replays", "plugin_stale_channels")]


# probe.h enums used here
OP_FORWARD, OP_BACKWARD, OP_OPTIMIZER = 1, 2, 3
TIME_SOURCES = {0: "host", 1: "cuda_event", 2: "cupti", 3: "nccl"}


class Probe:
    def __init__(self, path: str | None = None):
        path = path or os.environ["SP_LIB"]
        self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        L = self.lib
        L.sp_init.argtypes = [ctypes.c_void_p]
        L.sp_intern.argtypes = [ctypes.c_char_p]
        L.sp_intern.restype = ctypes.c_uint32
        L.sp_mark_step.argtypes = [ctypes.c_int64]
        L.sp_cupti_pause.argtypes = [ctypes.c_char_p]
        L.sp_cupti_region_push.argtypes = [ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint32]
        L.sp_region_begin.argtypes = [ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint32]
        L.sp_region_begin.restype = ctypes.c_uint64
        L.sp_region_end.argtypes = [ctypes.c_uint64]
        L.sp_cupti_report.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32]
        L.sp_cupti_report.restype = ctypes.c_size_t
        L.sp_cupti_get_stats.argtypes = [ctypes.POINTER(CuptiStats)]
        L.sp_nccl_get_stats.argtypes = [ctypes.POINTER(NcclStats)]
        L.sp_nccl_recent_ops.argtypes = [ctypes.POINTER(SpEvent), ctypes.c_size_t]
        L.sp_nccl_recent_ops.restype = ctypes.c_size_t
        L.sp_last_warning.restype = ctypes.c_char_p

    def init(self) -> int:
        return self.lib.sp_init(None)

    def cupti_start(self) -> int:
        return self.lib.sp_cupti_start()

    def intern(self, name: str) -> int:
        return self.lib.sp_intern(name.encode())

    def push(self, kind: int, microbatch: int, name_id: int) -> None:
        self.lib.sp_cupti_region_push(kind, microbatch, name_id)

    def pop(self) -> None:
        self.lib.sp_cupti_region_pop()

    def region_begin(self, kind: int, microbatch: int, name_id: int) -> int:
        """A host-timed runtime region; it also tags the GPU work launched inside (CUPTI)."""
        return self.lib.sp_region_begin(kind, microbatch, name_id)

    def region_end(self, token: int) -> None:
        self.lib.sp_region_end(token)

    def flush(self) -> None:
        self.lib.sp_cupti_request_flush()

    def mark_step(self, step: int) -> int:
        return self.lib.sp_mark_step(step)

    def cupti_stats(self) -> CuptiStats:
        s = CuptiStats()
        s.struct_size = ctypes.sizeof(s)
        self.lib.sp_cupti_get_stats(ctypes.byref(s))
        return s

    def nccl_stats(self) -> NcclStats:
        s = NcclStats()
        s.struct_size = ctypes.sizeof(s)
        self.lib.sp_nccl_get_stats(ctypes.byref(s))
        return s

    def recent_nccl_ops(self) -> list[SpEvent]:
        buf = (SpEvent * 64)()
        n = self.lib.sp_nccl_recent_ops(buf, 64)
        return list(buf[: min(n, 64)])

    def last_warning(self) -> str:
        return (self.lib.sp_last_warning() or b"").decode(errors="replace")

    def report(self, top_k: int = 10) -> str:
        need = self.lib.sp_cupti_report(None, 0, top_k)
        buf = ctypes.create_string_buffer(need + 1)
        self.lib.sp_cupti_report(buf, need + 1, top_k)
        return buf.value.decode(errors="replace")


def stats_dict(s: ctypes.Structure) -> dict:
    return {name: getattr(s, name) for name, _ in s._fields_ if name != "struct_size"}


def report_counts(report: str) -> dict[str, int]:
    """Kernels counted per region type in sp_cupti_report's text."""
    counts: dict[str, int] = {}
    region = None
    for line in report.splitlines():
        if not line.startswith(" ") and line.endswith(":"):
            region = line[:-1]
            counts.setdefault(region, 0)
        elif region is not None and " count=" in line:
            counts[region] += int(line.split(" count=")[1].split()[0])
    return counts


def report_totals_us(report: str) -> dict[str, int]:
    """Total kernel microseconds per region type in sp_cupti_report's text."""
    totals: dict[str, int] = {}
    region = None
    for line in report.splitlines():
        if not line.startswith(" ") and line.endswith(":"):
            region = line[:-1]
            totals.setdefault(region, 0)
        elif region is not None and "total_us=" in line:
            totals[region] += int(line.split("total_us=")[1].split()[0])
    return totals
