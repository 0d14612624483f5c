"""Process-group identity and per-group sequence numbers, so rank 0 can match one collective or
one send/recv pair across ranks: (group_id, seq) for collectives, (group_id, src, dst, seq) for p2p.

group_id is a hash of the group's name, which torch assigns identically on every member (groups
are created collectively, in the same order); Python's hash() is salted per process, so a stable
hash (blake2b) is used instead.
"""
from __future__ import annotations

import hashlib
import threading
from typing import Any


def stable_id(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


class GroupInfo:
    __slots__ = ("group", "group_id", "size", "ranks", "coll_seq", "p2p_seq", "observer")

    def __init__(self, group: Any, name: str, ranks: list[int]):
        self.group = group  # held: the id() key below must not be reused while we know it
        self.group_id = stable_id("pg:" + name)
        self.size = len(ranks)
        self.ranks = ranks
        self.coll_seq = 0
        self.p2p_seq: dict[tuple[int, int], int] = {}
        # _c10d.GroupObserver when the group's collectives are observed in C++
        # (hooks/process_group.py): it numbers them, for the by-name wrappers too.
        self.observer: Any = None

    def colls_numbered(self) -> int:
        return self.observer.coll_seq if self.observer is not None else self.coll_seq


class GroupTable:
    """Per-group counters. Collectives are counted per group, p2p per (peer, direction)."""

    def __init__(self, dist: Any):
        self._dist = dist
        self._by_id: dict[int, GroupInfo] = {}
        self._lock = threading.Lock()  # DDP comm hooks may run on autograd's device threads

    def info(self, group: Any) -> GroupInfo | None:
        if group is None:
            group = self._dist.group.WORLD
            if group is None:
                return None
        found = self._by_id.get(id(group))
        if found is None:
            found = self._make(group)
            if found is not None:
                self._by_id[id(group)] = found
        return found

    def _make(self, group: Any) -> GroupInfo | None:
        c10d = self._dist.distributed_c10d
        try:
            ranks = list(c10d.get_process_group_ranks(group))
        except Exception:  # noqa: BLE001 - not a member, or a group torch does not know
            return None
        name = ""
        for getter in (getattr(c10d, "_get_process_group_name", None),
                       lambda g: getattr(g, "group_name", "")):
            if getter is None:
                continue
            try:
                name = str(getter(group))
            except Exception:  # noqa: BLE001
                name = ""
            if name:
                break
        if not name:  # fall back to the membership: unique unless two groups share ranks
            name = "ranks:" + ",".join(map(str, sorted(ranks)))
        return GroupInfo(group, name, ranks)

    def ops_numbered(self) -> int:
        """Collectives and sends/receives numbered so far, in every group (all recorded)."""
        with self._lock:
            return sum(i.colls_numbered() + sum(i.p2p_seq.values()) for i in self._by_id.values())

    def next_coll(self, info: GroupInfo) -> int:
        if info.observer is not None:
            return info.observer.next_coll()  # one atomic counter for C++ hooks and wrappers
        with self._lock:
            seq = info.coll_seq
            info.coll_seq += 1
        return seq

    def next_p2p(self, info: GroupInfo, src: int, dst: int) -> int:
        with self._lock:
            key = (src, dst)
            seq = info.p2p_seq.get(key, 0)
            info.p2p_seq[key] = seq + 1
        return seq

    def to_global(self, info: GroupInfo, group_rank: int) -> int:
        return info.ranks[group_rank] if 0 <= group_rank < len(info.ranks) else -1


def sequence_number(pg: Any) -> int | None:
    getter = getattr(pg, "_get_sequence_number_for_group", None)
    if getter is None:
        return None
    try:
        return int(getter())
    except Exception:  # noqa: BLE001 - a backend that does not count
        return None


def group_name(pg: Any) -> str:
    for attr in ("group_name", "group_desc"):
        try:
            value = getattr(pg, attr)
            if value:
                return repr(str(value))
        except Exception:  # noqa: BLE001
            continue
    return "(unnamed)"
