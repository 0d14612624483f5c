"""Works issued through the process-group layer and not finished yet, and how each one's end
is found (hooks/process_group.py records them).

Whichever comes first ends an op: its future's completion, the training thread's wait() on it
returning, or (below) the training thread seeing it complete. The backend may run callbacks after
it has woken the waiter, and an op that ends after the code waiting for it resumed would not be
seen as what that code waited for. Only the first end is recorded.

- With a future, where straggler_probe._c10d is built (against the installed torch): a C++
  callback on the future stamps its completion on the backend's thread, with no GIL and no Python
  (python/src/c10d/work_stamp.h), and the training thread records the op with that end when it next
  looks: at a wait() on it (the earlier of the stamp and the wait's return), at its next op
  through this layer, after a backward, at a step boundary (one still open after UNWAITED_STEPS
  steps is given up there). Counted in `stamped_ends`. Every async collective of the step then
  costs the training thread no GIL hand-over (bench/README.md, per_op_cost: ~50-80 us each).
- With a future and no _c10d: the future's Python callback (the backend's thread), except for
  works polled below.
- Without a future (gloo's p2p and reduce-scatter): a wait() on it; one never waited in Python
  is settled at a step boundary (complete: ended by now; still open after UNWAITED_STEPS steps:
  given up at now, so that the table stays bounded). Both counted in `ended_unwaited`.
- Polled (async collectives the training thread issues inside a backward on a group other than
  NCCL's: a gloo DDP job's bucket all-reduces): a Python callback per work, run on gloo's thread,
  costs the launch-bound training thread ~80 µs of CPU per bucket (the GIL changing hands; 14
  buckets: +10% of an 11 ms CPU step). So such a work ends when the training thread first sees
  it complete: at the next op it issues through this layer, or at the end of the backward, which
  DDP's final callback holds until every bucket is done (the last buckets, the ones a slow rank
  delays, end there, to within the return from backward()). An earlier bucket's end is late by
  at most the compute until the next bucket's launch. Counted in `polled_ends`.
"""
from __future__ import annotations

import collections
from typing import Any, Callable

from .._timing import now_ns

# A futureless work not waited for in Python within this many step boundaries is ended there
# (its end is then only "by this boundary"): a job that never waits must not grow the table.
UNWAITED_STEPS = 2

Done = Callable[..., None]  # done(end_ns, wait_start_ns | None)

# OpenWorks.stamp's answer when it cannot stamp a work (no _c10d, or not a c10d Work): the caller
# asks the work for its future itself. None instead means the work has no future.
NO_STAMP = object()


class OpenWorks:
    def __init__(self) -> None:
        self._open: dict[int, tuple[Any, Done]] = {}  # id(work) -> (work, done)
        self._futureless: dict[int, int] = {}  # id -> step issued
        # polled: (id, future, step issued). Their futures are asked, not the works: gloo marks
        # the future complete (waking DDP's wait) before the work says is_completed()
        self._polled: collections.deque[tuple[int, Any, int]] = collections.deque()
        self._stamped: dict[int, tuple[Any, int]] = {}  # id -> (its WorkStamp, step issued)
        self._stamp = _stamp_completion()
        self.ended_unwaited = 0
        self.polled_ends = 0
        self.stamped_ends = 0

    @property
    def stamps(self) -> bool:
        """Whether works' ends are stamped in C++ (straggler_probe._c10d is there)."""
        return self._stamp is not None

    def stamp(self, work: Any) -> Any:
        """A WorkStamp for `work`; None: the work has no future (gloo's p2p and reduce-scatter),
        so asking it again is no use; NO_STAMP: no _c10d, or not a c10d Work."""
        if self._stamp is None:
            return NO_STAMP
        try:
            return self._stamp(work)
        except Exception:  # noqa: BLE001 - not a c10d Work (a fake group's): the Python path
            return NO_STAMP

    def __contains__(self, key: int) -> bool:
        return key in self._open

    def add(self, work: Any, done: Done, fut: Any, poll: bool, step: int,
            stamp: Any = None) -> None:
        """`stamp`: the work's WorkStamp (self.stamp), which then ends it; else `fut`, its
        future (None: it has none)."""
        key = id(work)
        self._open[key] = (work, done)
        if stamp is not None:
            self._stamped[key] = (stamp, step)
        elif fut is None:
            self._futureless[key] = step
        elif poll:
            self._polled.append((key, fut, step))
        else:
            # the callback holds the key, not the Work: Work -> future -> callback -> Work would
            # be a cycle through C++ that Python's collector cannot see
            fut.add_done_callback(lambda _f: self.finish(key, None, now_ns()))

    def finish(self, key: int, work: Any, end_ns: int, wait_start: int | None = None) -> None:
        """The op of `key` (of `work` when given) ended at end_ns: recorded once."""
        entry = self._open.get(key)
        if entry is None or (work is not None and entry[0] is not work):
            return
        if self._open.pop(key, None) is not None:  # atomic: only the first one records
            stamped = self._stamped.pop(key, None)
            if stamped is not None and 0 < stamped[0].end_ns < end_ns:
                end_ns = stamped[0].end_ns  # complete before the wait returned
            futureless = self._futureless.pop(key, None) is not None
            entry[1](end_ns, wait_start if futureless else None)

    @property
    def polling(self) -> bool:
        return bool(self._polled) or bool(self._stamped)

    def poll(self) -> None:
        """Ends the stamped works complete by now at their stamps, and the polled ones complete
        by now, in issue order, now (the training thread)."""
        if self._stamped:
            for key, (stamp, _) in list(self._stamped.items()):
                end = stamp.end_ns
                if end:
                    entry = self._open.get(key)
                    if entry is None:
                        self._stamped.pop(key, None)
                    else:
                        self.stamped_ends += 1
                        self.finish(key, entry[0], end)
        polled = self._polled
        while polled:
            key, fut, _ = polled[0]
            entry = self._open.get(key)
            if entry is not None and not _completed(fut, "done"):
                return
            polled.popleft()
            if entry is not None:
                self.polled_ends += 1
                self.finish(key, entry[0], now_ns())

    def settle(self, step: int) -> None:
        """At a step boundary: polled works complete by now end now; futureless ones nobody
        waited for are settled (see the docstring). Works still open after UNWAITED_STEPS steps
        are given up at now."""
        self.poll()
        for key, (_, issued_step) in list(self._stamped.items()):
            entry = self._open.get(key)
            if entry is None:
                self._stamped.pop(key, None)
            elif step - issued_step >= UNWAITED_STEPS:
                self.ended_unwaited += 1
                self.finish(key, entry[0], now_ns())
        while self._polled and step - self._polled[0][2] >= UNWAITED_STEPS:
            key = self._polled.popleft()[0]
            entry = self._open.get(key)
            if entry is not None:
                self.ended_unwaited += 1
                self.finish(key, entry[0], now_ns())
        for key, issued_step in list(self._futureless.items()):
            entry = self._open.get(key)
            if entry is None:
                self._futureless.pop(key, None)
                continue
            if _completed(entry[0], "is_completed") or step - issued_step >= UNWAITED_STEPS:
                self.ended_unwaited += 1
                self.finish(key, entry[0], now_ns())


def _stamp_completion() -> Callable[[Any], Any] | None:
    """straggler_probe._c10d.stamp_completion, or None where the bridge is not built (or torch's
    Work type is not the one it was built against)."""
    try:
        from .. import _c10d  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - ImportError, or torch's libraries not loadable
        return None
    return getattr(_c10d, "stamp_completion", None)


def _completed(obj: Any, method: str) -> bool:
    """obj.<method>() (a future's done(), a work's is_completed()); False when it cannot say
    (then given up at a step boundary)."""
    try:
        return bool(getattr(obj, method)())
    except Exception:  # noqa: BLE001
        return False
