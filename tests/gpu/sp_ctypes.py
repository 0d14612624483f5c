"""ctypes view of libstraggler_probe.so's C entry points used by the GPU checks.

The checks run with the library in LD_PRELOAD (or load it here): ctypes.CDLL on the same path
returns the copy already in the process, so these calls reach the very instance that records.

The two stats structs are built from the headers' field lists (SP_CUPTI_STATS_FIELDS in
cupti/include/straggler_probe/gpu/cupti_c_api.h, SP_NCCL_STATS_FIELDS in nccl_hooks/include/
straggler_probe/gpu/nccl_c_api.h: "a field added to the struct is added here, at the end"), read
from the working tree that travels with the check; the lists below are the fallback when a header
cannot be read. The library writes back its own struct_size and copies at most what both sides
know, so a library older or newer than the header still gives every field it has: stats_dict()
leaves out the fields the library did not fill.
"""
from __future__ import annotations

import ctypes
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CUPTI_HEADER = os.path.join(REPO, "cupti/include/straggler_probe/gpu/cupti_c_api.h")
NCCL_HEADER = os.path.join(REPO, "nccl_hooks/include/straggler_probe/gpu/nccl_c_api.h")

_CTYPES = {"int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32, "int64_t": ctypes.c_int64,
           "uint64_t": ctypes.c_uint64, "double": ctypes.c_double}

# The header's lists as of this check's writing (fallback only).
_CUPTI_FIELDS = [
    ("int32_t", "active"), ("int32_t", "paused"), ("int32_t", "cupti_major"),
    ("uint64_t", "windows"), ("uint64_t", "kernels"), ("uint64_t", "memcpys"),
    ("uint64_t", "tagged_activities"), ("uint64_t", "untagged_activities"),
    ("uint64_t", "nccl_kernels"), ("uint64_t", "dropped_records"), ("uint64_t", "buffers_refused"),
    ("uint64_t", "events_emitted"), ("double", "clock_skew_ppm"), ("int64_t", "clock_offset_ns"),
    ("uint64_t", "clock_uncertainty_ns"), ("uint32_t", "time_base_changes"),
    ("uint32_t", "pauses"), ("int32_t", "time_base"), ("int32_t", "attribution"),
    ("double", "ns_per_unit"), ("uint64_t", "markers_issued"), ("uint64_t", "marker_failures"),
    ("uint64_t", "markers_lost"), ("uint64_t", "undecided_released")]
_NCCL_FIELDS = [
    "recorded", "folded_groups", "passthrough", "failed_calls", "graph_captured", "in_progress",
    "steps_marked", "cuda_event_timed", "cuda_event_fallbacks", "plugin_contexts", "plugin_ops",
    "plugin_ops_gpu_timed", "plugin_ops_swept", "plugin_ce_ops", "plugin_graph_ops",
    "plugin_graph_replays", "plugin_stale_channels", "plugin_ops_started", "plugin_ops_completed"]


def _macro_body(path: str, name: str) -> str | None:
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"#define\s+" + name + r"\(X\)((?:[^\n]*\\\n)*[^\n]*)", text)
    return m.group(1) if m else None


def header_cupti_fields(path: str = CUPTI_HEADER) -> list[tuple[str, str]]:
    body = _macro_body(path, "SP_CUPTI_STATS_FIELDS")
    fields = re.findall(r"X\(\s*(\w+)\s*,\s*(\w+)\s*\)", body or "")
    if not fields or any(t not in _CTYPES for t, _ in fields):
        return list(_CUPTI_FIELDS)
    return fields


def header_nccl_fields(path: str = NCCL_HEADER) -> list[str]:
    body = _macro_body(path, "SP_NCCL_STATS_FIELDS")
    fields = re.findall(r"X\(\s*(\w+)\s*,\s*\w+\s*,\s*\w+\s*\)", body or "")
    return fields or list(_NCCL_FIELDS)


class SpEvent(ctypes.Structure):
    _fields_ = [("start_ns", ctypes.c_uint64), ("end_ns", ctypes.c_uint64),
                ("group_id", ctypes.c_uint64), ("seq", ctypes.c_uint64),
                ("bytes", ctypes.c_uint64), ("kind", ctypes.c_uint32), ("coll", ctypes.c_uint32),
                ("microbatch", ctypes.c_int32), ("peer", ctypes.c_int32),
                ("group_size", ctypes.c_int32), ("stream", ctypes.c_uint32),
                ("name_id", ctypes.c_uint32), ("time_source", ctypes.c_uint32),
                ("step_plus_one", ctypes.c_uint64)]


class CuptiStats(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32)] + [
        (name, _CTYPES[t]) for t, name in header_cupti_fields()]


class NcclStats(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("plugin_active", ctypes.c_uint32)] + [
        (name, ctypes.c_uint64) for name in header_nccl_fields()]


# probe.h enums used here
OP_FORWARD, OP_BACKWARD, OP_OPTIMIZER = 1, 2, 3
OP_NAMES = {1: "forward", 2: "backward", 3: "optimizer", 4: "collective", 5: "send", 6: "recv",
            7: "gc", 8: "data-wait", 9: "kernel", 10: "memcpy", 11: "other"}
TIME_SOURCES = {0: "cpu", 1: "cuda_event", 2: "cupti", 3: "nccl"}
TIME_BASES = {0: "unknown", 1: "ns", 2: "ticks"}
ATTRIBUTIONS = {0: "markers", 1: "external", 2: "off"}

SUMMARY_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)


class Probe:
    def __init__(self, path: str | None = None):
        path = path or os.environ["SP_LIB"]
        self.path = path
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
        L.sp_set_summary_callback.argtypes = [SUMMARY_CALLBACK, ctypes.c_void_p]
        self._callback = None  # kept alive while the library may call it

    def init(self) -> int:
        return self.lib.sp_init(None)

    def cupti_start(self) -> int:
        return self.lib.sp_cupti_start()

    def intern(self, name: str) -> int:
        return self.lib.sp_intern(name.encode())

    def push(self, kind: int, microbatch: int, name_id: int) -> int:
        return self.lib.sp_cupti_region_push(kind, microbatch, name_id)

    def pop(self) -> None:
        self.lib.sp_cupti_region_pop()

    def region_begin(self, kind: int, microbatch: int, name_id: int) -> int:
        """A CPU-timed runtime region; it also brackets the GPU work launched inside (CUPTI)."""
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

    def set_summary_callback(self, fn) -> None:
        """fn(bytes) for every finished step summary (probe.h: called on the consumer thread just
        before the summary is queued; it observes, the transport still gets the summary). None
        removes it: do so before the interpreter exits."""
        if fn is None:
            self.lib.sp_set_summary_callback(SUMMARY_CALLBACK(), None)
            self._callback = None
            return

        def call(data, size, _user):  # noqa: ANN001
            try:
                fn(ctypes.string_at(data, size))
            except Exception:  # noqa: BLE001 - never let an exception reach the consumer thread
                pass
        self._callback = SUMMARY_CALLBACK(call)
        self.lib.sp_set_summary_callback(self._callback, None)


def stats_dict(s: ctypes.Structure) -> dict:
    """The fields the library filled (those within the struct_size it wrote back and ours)."""
    filled = min(int(s.struct_size) or ctypes.sizeof(s), ctypes.sizeof(s))
    out = {}
    for name, ctype in s._fields_:
        if name == "struct_size":
            continue
        if getattr(type(s), name).offset + ctypes.sizeof(ctype) <= filled:
            out[name] = getattr(s, name)
    return out


def parse_report(report: str) -> dict[str, dict[str, list[int]]]:
    """sp_cupti_report's text as {region key: {kernel name: [count, total_us, max_us]}}; keys as
    the report writes them ("forward", "forward#12", "outside-regions", "cuda-graph#3")."""
    out: dict[str, dict[str, list[int]]] = {}
    region = None
    for line in report.splitlines():
        if not line.startswith(" ") and line.endswith(":") and not line.startswith("GPU capture"):
            region = line[:-1]
            out.setdefault(region, {})
        elif region is not None and line.startswith("  ") and " count=" in line:
            name, _, rest = line[2:].rpartition(" count=")
            vals = dict(kv.split("=", 1) for kv in ("count=" + rest).split() if "=" in kv)
            try:
                out[region][name] = [int(vals.get("count", 0)), int(vals.get("total_us", 0)),
                                     int(vals.get("max_us", 0))]
            except ValueError:
                continue
    return out


def report_counts(report: str) -> dict[str, int]:
    """Kernels counted per region key in sp_cupti_report's text."""
    return {k: sum(v[0] for v in names.values()) for k, names in parse_report(report).items()}


def report_totals_us(report: str) -> dict[str, int]:
    """Total kernel microseconds per region key in sp_cupti_report's text."""
    return {k: sum(v[1] for v in names.values()) for k, names in parse_report(report).items()}


def region_kind(key: str) -> str:
    """'forward#12' -> 'forward'."""
    return key.split("#", 1)[0]
