"""A process group's collectives observed by C++ hooks (straggler_probe._c10d.GroupObserver,
python/src/c10d/group_observer.h), where _c10d is built against a torch whose ProcessGroup takes
C++ pre/post hooks (2.15). hooks/process_group.py uses it in place of its Python hooks; sends
and receives come back to it through the callables given here."""
from __future__ import annotations

from typing import Any, Callable

from .. import _native as N
from .op_kinds import classify


class ObserverApi:
    """What making GroupObservers takes: _c10d, _core's record entry, and the kinds and names of
    torch's HookOpName values (sends and receives routed to Python)."""

    def __init__(self, c10d: Any, record_entry: Any, kinds: list, names: list[str]):
        self.c10d = c10d
        self.record_entry = record_entry
        self.kinds = kinds
        self.names = names

    def observe(self, pg: Any, info: Any, train_thread: int, hook_id: int,
                p2p_pre: Callable[[str, bool, int, int], None],
                p2p_post: Callable[[Any], None]) -> Any:
        """A GroupObserver attached to pg (info: its GroupInfo, which it numbers from then on);
        raises if the group cannot take C++ hooks (a Python backend's)."""
        names = self.names

        def pre(op: int, is_async: bool, nbytes: int, root: int) -> None:
            p2p_pre(names[op], is_async, nbytes, root)

        observer = self.c10d.GroupObserver(
            self.record_entry, info.group_id, info.size, train_thread, self.kinds,
            N.STREAM_MAIN, N.STREAM_ASYNC_COMM, pre, p2p_post, hook_id, info.colls_numbered())
        observer.attach(pg)
        info.observer = observer
        return observer

    def wrapper_depth(self) -> tuple[Callable[[], None], Callable[[], None]]:
        """(enter, exit): a by-name wrapper records the op this thread issues inside."""
        return self.c10d.wrapper_enter, self.c10d.wrapper_exit

    def work_waited(self, work: Any, end_ns: int) -> None:
        self.c10d.work_waited(work, end_ns)

    def settle(self, step: int) -> None:
        self.c10d.settle_works(step)

    def sweep(self) -> None:
        self.c10d.sweep_works()


def observer_api(rec: Any) -> ObserverApi | None:
    """The API where _c10d observes groups in C++; None otherwise (the Python hooks then)."""
    try:
        from .. import _c10d  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - not built, or torch's libraries not loadable
        return None
    entry = getattr(rec.core, "record_entry", None)
    if not getattr(_c10d, "observes_groups", False) or entry is None:
        return None
    try:
        record_entry = entry()
        names = [str(n) for n in _c10d.hook_op_names()]
    except Exception:  # noqa: BLE001
        return None
    kinds: list[Any] = []
    for name in names:
        kind_coll = classify(name)
        if kind_coll is None:
            kinds.append(None)  # counted as seen, not recorded (SPLIT, NEW_WINDOW, UNKNOWN)
        elif kind_coll[0] == N.COLLECTIVE:
            kinds.append((kind_coll[0], kind_coll[1], rec.intern("pg:" + name.lower()), 1))
        else:
            kinds.append((kind_coll[0], kind_coll[1], 0, 2))  # sends and receives: Python
    return ObserverApi(_c10d, record_entry, kinds, names)
