"""Every collective and p2p call made through torch.distributed, with its group and order.

The functions are replaced in both torch.distributed and torch.distributed.distributed_c10d, so
that torch's own identity checks (P2POp, batch_isend_irecv) see the same objects users pass.
A thread-local depth keeps calls torch makes internally (all_gather_object -> all_gather) from
being counted twice. The collectives of a group whose ops C++ hooks observe
(hooks/group_observer.py) are left to those hooks: the wrapper only calls through.
Times are CPU times around the call; for async calls the end is when the work completes (its
future, or wait() where gloo has no future for p2p). A receive without a future is recorded
from the end of the compute that ran between its issue and the wait that ended it
(futureless_recv_start).
"""
from __future__ import annotations

import functools
import inspect
import threading
from typing import Any, Callable

from .. import _native as N
from .._timing import now_ns
from .groups import GroupInfo, GroupTable
from .open_works import NO_STAMP

# name: (kind, coll, parameter holding the payload, peer parameter, group-relative peer parameter)
_SPECS: dict[str, tuple[int, int, str | None, str | None, str | None]] = {
    "all_reduce": (N.COLLECTIVE, N.COLL_ALL_REDUCE, "tensor", None, None),
    "all_reduce_coalesced": (N.COLLECTIVE, N.COLL_ALL_REDUCE, "tensors", None, None),
    "all_gather": (N.COLLECTIVE, N.COLL_ALL_GATHER, "tensor", None, None),
    "all_gather_into_tensor": (N.COLLECTIVE, N.COLL_ALL_GATHER, "input_tensor", None, None),
    "_all_gather_base": (N.COLLECTIVE, N.COLL_ALL_GATHER, "input_tensor", None, None),
    "all_gather_coalesced": (N.COLLECTIVE, N.COLL_ALL_GATHER, "input_tensor_list", None, None),
    "all_gather_object": (N.COLLECTIVE, N.COLL_ALL_GATHER, None, None, None),
    "reduce_scatter": (N.COLLECTIVE, N.COLL_REDUCE_SCATTER, "output", None, None),
    "reduce_scatter_tensor": (N.COLLECTIVE, N.COLL_REDUCE_SCATTER, "output", None, None),
    "_reduce_scatter_base": (N.COLLECTIVE, N.COLL_REDUCE_SCATTER, "output", None, None),
    "broadcast": (N.COLLECTIVE, N.COLL_BROADCAST, "tensor", None, None),
    "broadcast_object_list": (N.COLLECTIVE, N.COLL_BROADCAST, None, None, None),
    "reduce": (N.COLLECTIVE, N.COLL_REDUCE, "tensor", None, None),
    "all_to_all": (N.COLLECTIVE, N.COLL_ALL_TO_ALL, "input_tensor_list", None, None),
    "all_to_all_single": (N.COLLECTIVE, N.COLL_ALL_TO_ALL, "input", None, None),
    "barrier": (N.COLLECTIVE, N.COLL_BARRIER, None, None, None),
    "monitored_barrier": (N.COLLECTIVE, N.COLL_BARRIER, None, None, None),
    "gather": (N.COLLECTIVE, N.COLL_GATHER, "tensor", None, None),
    "gather_object": (N.COLLECTIVE, N.COLL_GATHER, None, None, None),
    "scatter": (N.COLLECTIVE, N.COLL_SCATTER, "tensor", None, None),
    "scatter_object_list": (N.COLLECTIVE, N.COLL_SCATTER, None, None, None),
    "send": (N.SEND, N.COLL_SEND, "tensor", "dst", "group_dst"),
    "recv": (N.RECV, N.COLL_RECV, "tensor", "src", "group_src"),
    "isend": (N.SEND, N.COLL_SEND, "tensor", "dst", "group_dst"),
    "irecv": (N.RECV, N.COLL_RECV, "tensor", "src", "group_src"),
    "send_object_list": (N.SEND, N.COLL_SEND, None, "dst", "group_dst"),
    "recv_object_list": (N.RECV, N.COLL_RECV, None, "src", "group_src"),
}
_ALWAYS_ASYNC = {"isend", "irecv"}


def payload_bytes(obj: Any) -> int:
    if obj is None:
        return 0
    if isinstance(obj, (list, tuple)):
        return sum(payload_bytes(o) for o in obj)
    numel = getattr(obj, "numel", None)
    if numel is None:
        return 0
    return int(numel()) * int(obj.element_size())


class WorkProxy:
    """Stands in for a Work without a future (gloo p2p): the op ends when the caller sees it end.

    on_done(wait_start) gets when the wait that saw the end began (None when is_completed() saw
    it): gloo says nothing about such a work before wait() (is_completed() stays False, there is
    no future), so the op's true end lies anywhere between its issue and that wait's return."""

    __slots__ = ("_work", "_on_done")

    def __init__(self, work: Any, on_done: Callable[[int | None], None]):
        self._work = work
        self._on_done: Callable[[int | None], None] | None = on_done

    def _fire(self, wait_start: int | None) -> None:
        cb, self._on_done = self._on_done, None
        if cb is not None:
            cb(wait_start)

    def wait(self, *args: Any, **kwargs: Any) -> Any:
        wait_start = now_ns()
        result = self._work.wait(*args, **kwargs)
        self._fire(wait_start)
        return result

    def is_completed(self) -> bool:
        done = self._work.is_completed()
        if done:
            self._fire(None)
        return done

    def __getattr__(self, name: str) -> Any:
        return getattr(self._work, name)


class CollectiveHooks:
    def __init__(self, recorder: Any, dist: Any, my_rank: int):
        self.rec = recorder
        self.dist = dist
        self.rank = my_rank
        self.groups = GroupTable(dist)
        self.tls = threading.local()
        self._patched: list[tuple[Any, str, Any]] = []
        # The process-group layer's open works (hooks/open_works.py) while it is installed: an
        # async op's end is stamped in C++ and recorded there, with no Python callback on the
        # backend's thread; None: the future's Python callback below.
        self.works: Any = None
        # (enter, exit) of _c10d's thread-local wrapper depth, while the process-group layer
        # observes groups in C++ (hooks/process_group.py): its hooks then skip what a wrapper
        # records, as the Python hooks do through tls.depth.
        self.native_depth: tuple[Callable[[], None], Callable[[], None]] | None = None

    # -- installation ---------------------------------------------------------------------------
    def install(self) -> Callable[[], None]:
        c10d = self.dist.distributed_c10d
        for name, spec in _SPECS.items():
            orig = getattr(c10d, name, None)
            if orig is None or getattr(orig, "_straggler_probe", False):
                continue
            wrapper = self._wrap(name, orig, spec)
            for module in (c10d, self.dist):
                if getattr(module, name, None) is orig:
                    self._patched.append((module, name, orig))
                    setattr(module, name, wrapper)
        return self.uninstall

    def uninstall(self) -> None:
        for module, name, orig in reversed(self._patched):
            setattr(module, name, orig)
        self._patched.clear()

    def suppressed(self) -> "_Suppress":
        """Calls made inside (a DDP comm hook we time as a whole) are not recorded again."""
        return _Suppress(self.tls, self.native_depth)

    # -- the wrapper ------------------------------------------------------------------------------
    def _wrap(self, name: str, orig: Callable[..., Any],
              spec: tuple[int, int, str | None, str | None, str | None]) -> Callable[..., Any]:
        params = list(inspect.signature(orig).parameters)
        pos = {p: i for i, p in enumerate(params)}
        kind, coll, payload, peer_p, group_peer_p = spec
        always_async = name in _ALWAYS_ASYNC
        name_id_holder: list[int] = []
        tls = self.tls
        rec = self.rec

        def arg(args: tuple, kwargs: dict, pname: str | None) -> Any:
            if pname is None:
                return None
            i = pos.get(pname)
            if i is not None and i < len(args):
                return args[i]
            return kwargs.get(pname)

        @functools.wraps(orig)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if getattr(tls, "depth", 0) or rec.failed or rec.paused:
                return orig(*args, **kwargs)
            try:
                info = self.groups.info(arg(args, kwargs, "group"))
                # A group observed in C++ (hooks/process_group.py) records its collectives
                # itself, at a timestamp's cost: nothing for the wrapper to add.
                observed = kind == N.COLLECTIVE and info is not None and info.observer is not None
                if not observed:
                    if not name_id_holder:
                        name_id_holder.append(rec.intern(name))
                    is_async = always_async or bool(arg(args, kwargs, "async_op"))
                    nbytes = payload_bytes(arg(args, kwargs, payload))
                    peer = self._peer(info, arg(args, kwargs, peer_p),
                                      arg(args, kwargs, group_peer_p))
            except Exception as err:  # noqa: BLE001
                rec.fail(f"{name}: {type(err).__name__}: {err}")
                return orig(*args, **kwargs)
            if observed:
                return orig(*args, **kwargs)
            mb = rec.p2p_boundary(kind, peer) if kind != N.COLLECTIVE else None
            with self.suppressed():  # what it calls in turn is this one op
                start = now_ns()
                result = orig(*args, **kwargs)
            if info is None:
                return result
            try:
                if kind == N.RECV and peer < 0 and isinstance(result, int) and result >= 0:
                    peer = result  # recv from any source returns the sender
                return self._finish(kind, coll, info, peer, nbytes, start, is_async, result,
                                    name_id_holder[0], mb)
            except Exception as err:  # noqa: BLE001
                rec.fail(f"{name}: {type(err).__name__}: {err}")
                return result

        wrapper._straggler_probe = True  # type: ignore[attr-defined]
        return wrapper

    def _peer(self, info: GroupInfo | None, peer: Any, group_peer: Any) -> int:
        if peer is not None:
            return int(peer)
        if group_peer is not None and info is not None:
            return self.groups.to_global(info, int(group_peer))
        return -1

    def _finish(self, kind: int, coll: int, info: GroupInfo, peer: int, nbytes: int, start: int,
                is_async: bool, result: Any, name_id: int, mb: int | None) -> Any:
        if kind == N.COLLECTIVE:
            seq = self.groups.next_coll(info)
            stream = N.STREAM_ASYNC_COMM if is_async else N.STREAM_MAIN
        else:
            if peer < 0:
                return result  # a receive from any source posted async: the pair cannot be matched
            src, dst = (self.rank, peer) if kind == N.SEND else (peer, self.rank)
            seq = self.groups.next_p2p(info, src, dst)
            if is_async:
                stream = N.STREAM_P2P_SEND if kind == N.SEND else N.STREAM_P2P_RECV
            else:
                stream = N.STREAM_MAIN
        rec = self.rec

        def record(end_ns: int, begin_ns: int = start) -> None:
            try:  # may run on a backend thread: an error here must not reach torch's callback
                rec.record_comm(kind, coll, begin_ns, max(begin_ns, end_ns), stream,
                                info.group_id, seq, nbytes, peer, info.size, name_id, mb)
            except Exception as err:  # noqa: BLE001
                rec.fail(f"recording a completed {name_id}: {type(err).__name__}: {err}")

        if not is_async or result is None:
            record(now_ns())
            return result
        works = self.works
        stamp = works.stamp(result) if works is not None else NO_STAMP
        if stamp is not NO_STAMP and stamp is not None:
            works.add(result, lambda end_ns, _wait_start=None: record(end_ns), None, False,
                      rec.step, stamp)
            return result
        fut = None  # None from the stamp: no future (gloo's send/recv), nothing to ask again
        if stamp is NO_STAMP:
            try:
                fut = result.get_future()
            except Exception:  # noqa: BLE001 - gloo send/recv work has no future
                fut = None
        if fut is not None:
            fut.add_done_callback(lambda _f: record(now_ns()))
            return result
        return WorkProxy(result, lambda wait_start: record(
            now_ns(), futureless_recv_start(rec, kind, start, wait_start)))


def futureless_recv_start(rec: Any, kind: int, issued_ns: int, wait_start_ns: int | None) -> int:
    """Where a receive whose end only a wait() saw starts. A schedule that posts its receives
    ahead (interleaved 1F1B posts the next action's receive, then computes) waits for each when
    its compute needs it; the data may have arrived at any time since the sender's issue, and
    gloo does not say when. From the post, the receive's span would hold the receiver's own
    compute since then: the analysis would take it as transfer (and an ideal transfer that long
    too), and the receiver's compute would no longer be what its consumer waited for. So when
    the training thread computed after the post, the receive starts where that compute ended:
    what is left is what the receiver waited for (its part that overlapped the compute cost
    nothing). A receive waited for with no compute since its post (1F1B's send + receive
    batches) keeps its issue, and so do sends (when their data became available)."""
    if kind != N.RECV or wait_start_ns is None or threading.get_ident() != rec.train_thread:
        return issued_ns
    computed_until = wait_start_ns if rec.in_region else rec.compute_end_ns
    return max(issued_ns, min(computed_until, wait_start_ns))


class _Suppress:
    __slots__ = ("_tls", "_prev", "_native")

    def __init__(self, tls: threading.local, native: Any = None):
        self._tls = tls
        self._native = native

    def __enter__(self) -> None:
        self._prev = getattr(self._tls, "depth", 0)
        self._tls.depth = 1
        if self._native is not None:
            self._native[0]()

    def __exit__(self, *exc: Any) -> None:
        self._tls.depth = self._prev
        if self._native is not None:
            self._native[1]()
