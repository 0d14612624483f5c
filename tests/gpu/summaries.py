"""The runtime's step summaries as the analysis receives them, for the gpt check: which region
times reached them (CUPTI spans, CPU stamps, CUDA events) and what they say.

A summary is taken with sp_set_summary_callback (sp_ctypes.Probe.set_summary_callback), which
observes every finished summary just before it is queued for the transport, and decoded here
from its wire form (runtime/src/codec/summary_codec.cpp: 16-byte header "SPSM", u16 version, u16
flags, u32 body size, u32 CRC-32; runtime/src/codec/summary_codec_v2.cpp: the version-2 body, and
version 3's, which adds the step's CPU time after the annotations). Versions 2 and 3 are decoded
up to their ops (what these checks read); anything else is counted as undecodable.
"""
from __future__ import annotations

import struct
import threading
import zlib


class _Reader:
    def __init__(self, data: bytes):
        self.d = data
        self.i = 0

    def u8(self) -> int:
        v = self.d[self.i]
        self.i += 1
        return v

    def u64(self) -> int:
        v = struct.unpack_from("<Q", self.d, self.i)[0]
        self.i += 8
        return v

    def varint(self) -> int:
        shift = out = 0
        while True:
            b = self.u8()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
            if shift > 63:
                raise ValueError("varint too long")

    def svarint(self) -> int:
        u = self.varint()
        return (u >> 1) ^ -(u & 1)

    def str(self) -> str:
        n = self.varint()
        s = self.d[self.i:self.i + n]
        if len(s) != n:
            raise ValueError("truncated string")
        self.i += n
        return s.decode(errors="replace")


def decode(data: bytes) -> dict:
    """One encoded summary as {rank, step, step_start_ns, step_end_ns, names, ops: [...]}; each op
    {kind, time_source, start_ns, end_ns, microbatch, name_id, coll, stream, step_plus_one}.
    Raises ValueError on anything it cannot read."""
    if len(data) < 16 or data[:4] != b"SPSM":
        raise ValueError("not a step summary")
    version, flags, size, crc = struct.unpack_from("<HHII", data, 4)
    if version not in (2, 3) or flags != 0:
        raise ValueError(f"summary version {version} flags {flags}: only versions 2 and 3 are "
                         "decoded")
    body = data[16:]
    if len(body) != size or (zlib.crc32(body) & 0xFFFFFFFF) != crc:
        raise ValueError("size or checksum mismatch")
    r = _Reader(body)
    s: dict = {"rank": r.svarint(), "world_size": r.svarint(), "dp_rank": r.svarint(),
               "pp_stage": r.svarint(), "step": r.svarint(), "step_start_ns": r.u64()}
    s["step_end_ns"] = s["step_start_ns"] + r.svarint()
    s["clock_offset_ns"] = r.svarint()
    s["dropped_events"] = r.varint()
    s["names"] = [""] + [r.str() for _ in range(r.varint())]
    groups = [(r.u64(), r.svarint()) for _ in range(r.varint())]
    last_seq = [0] * len(groups)
    ops = []
    prev = s["step_start_ns"]
    this_label = s["step"] + 1
    for _ in range(r.varint()):
        head, presence = r.u8(), r.u8()
        start = prev + r.svarint()
        op = {"kind": head & 0x0F, "time_source": (head >> 4) & 0x3, "start_ns": start,
              "end_ns": start + r.varint(), "microbatch": -1, "name_id": 0, "coll": 0,
              "stream": 0, "step_plus_one": 0}
        tag = head >> 6
        if tag == 1:
            op["step_plus_one"] = this_label
        elif tag == 2:
            op["step_plus_one"] = this_label + r.svarint()
        elif tag == 3:
            raise ValueError("unknown step tag")
        if presence & 0x80:
            op["kind"], op["time_source"] = r.varint(), r.varint()
        if presence & 0x01:
            op["coll"] = r.varint()
        if presence & 0x02:
            op["microbatch"] = r.svarint()
        if presence & 0x04:
            r.svarint()  # peer
        if presence & 0x08:
            g = r.varint()
            last_seq[g] += r.svarint()
        if presence & 0x10:
            r.varint()  # bytes
        if presence & 0x20:
            op["stream"] = r.varint()
        if presence & 0x40:
            op["name_id"] = r.varint()
        ops.append(op)
        prev = start
    s["ops"] = ops
    return s


class SummaryTap:
    """Collects the encoded summaries the runtime finishes (consumer thread), decoded on demand."""

    def __init__(self, probe):
        self.probe = probe
        self._raw: list[bytes] = []
        self._lock = threading.Lock()
        self.undecodable = 0
        self.errors: list[str] = []

    def __enter__(self) -> "SummaryTap":
        self.probe.set_summary_callback(self._take)
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.probe.set_summary_callback(None)

    def _take(self, data: bytes) -> None:
        with self._lock:
            self._raw.append(data)

    def summaries(self) -> list[dict]:
        with self._lock:
            raw = list(self._raw)
        out = []
        self.undecodable = 0
        for data in raw:
            try:
                out.append(decode(data))
            except (ValueError, IndexError, struct.error) as err:
                self.undecodable += 1
                if len(self.errors) < 3:
                    self.errors.append(str(err))
        return out

    def ops(self, kinds: set[int] | None = None) -> list[dict]:
        return [op for s in self.summaries() for op in s["ops"]
                if kinds is None or op["kind"] in kinds]
