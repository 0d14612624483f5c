"""Collectives at the process-group layer, the one every torch.distributed entry point goes through.

hooks/collectives.py wraps torch.distributed's functions by name; torch keeps adding names
(all_gather_single, reduce_scatter_single, gather_into_tensor in 2.15, which FSDP2 uses) and
some callers skip them (functional collectives: DTensor, FSDP2 under compile; C++ callers). Below
those names every collective is a call on a ProcessGroup, so this layer records whatever did not
go through a wrapper (the wrappers' own calls are counted here, not recorded twice):

- torch with ProcessGroup.register_pre_hook / register_post_hook (2.15): torch calls our hooks
  before and after it issues each collective, whoever asked for it, functional collectives and
  C++ callers included. Each group gets the hooks when the probe first sees it (at init() and at
  every step boundary: groups made by FSDP or a DeviceMesh after init() are found there).
  Where straggler_probe._c10d is built against that torch, the hooks are C++
  (python/src/c10d/group_observer.h): a collective costs the issuing thread a timestamp and a
  sequence number, and its end is recorded by a C++ callback on its future, with no Python and
  no GIL (bench/README.md: the Python hooks cost a gloo DDP job ~50 us a bucket). Sends and
  receives still come here (_p2p_pre / _post), for the recorder's micro-batch state.
- older torch: the ProcessGroup methods whose names say they are collectives are wrapped on the
  class; callers that reach the group from C++ bypass that, and the check below says so.

An op is recorded from issue to the completion of its Work (hooks/open_works.py: its future, a
wait, or the training thread seeing it complete): on the training thread's stream when the caller
waits for it (async_op=False), else on the async-comm stream. Work.wait() is wrapped on the class: when the training thread
waits in it inside a forward or backward (FSDP waits for each layer's all-gather there), the
region is cut around the wait (Recorder.split_at_wait), so that a fast rank waiting for a slow
one does not look like a rank computing slowly. It is cut at every such wait, also one that
returns at once (the slow rank's), so that all ranks record the same pieces.

Pure-NCCL groups get nothing of this when libstraggler_probe.so's NCCL layer is in the process
(hooks/native_nccl.py): it records their operations with GPU times, which the analysis prefers;
their operations count as seen (the group's own sequence number) for the probe's sight check.

Unseen collectives: each group counts the collectives it issued (_get_sequence_number_for_group);
at each step boundary the probe compares that count with what it saw on the group, and the first
time they differ it says once how many went by unseen and what follows for the analysis.
"""
from __future__ import annotations

import threading
import warnings
from typing import Any, Callable

from .. import _native as N
from .._timing import now_ns
from .collectives import futureless_recv_start, payload_bytes
from .group_observer import ObserverApi, observer_api
from .groups import group_name, sequence_number
from .native_nccl import is_pure_nccl
from .op_kinds import classify
from .open_works import NO_STAMP, OpenWorks
from .pg_methods import patch_methods

HOOK_ID = 0x5350_5052  # "SPPR": our pre/post hook id on every group

class ProcessGroupHooks:
    # Whether groups' collectives are observed by C++ hooks where _c10d can (bench/step_cost
    # compares the two; the Python hooks are the fallback either way).
    observe_in_cpp = True

    def __init__(self, recorder: Any, dist: Any, collectives: Any, leave_nccl: bool = False):
        """leave_nccl: pure-NCCL groups are left to the NCCL layer of libstraggler_probe.so."""
        self.rec = recorder
        self.leave_nccl = leave_nccl
        self._native: dict[int, tuple[Any, int | None]] = {}  # left to NCCL: id -> (pg, seq at)
        self.dist = dist
        self.coll = collectives          # its tls.depth > 0: inside a by-name wrapper
        self.groups = collectives.groups
        self.mode = "off"
        self.recorded = 0                # ops recorded here (nobody else saw them)
        self._seen: dict[int, list] = {}  # id(pg) -> [pg, seen since baseline, baseline seq]
        self._tls = threading.local()    # .pending: ops issued by this thread, awaiting post
        self._names: dict[str, int] = {}
        self._kinds: dict[str, tuple[int, int] | None] = {}  # classify(), by op name
        self._patched: list[tuple[Any, str, Any]] = []
        self._warned = False
        self.unseen = 0
        self.works = OpenWorks()         # issued here and not finished yet
        self._op_names: dict[Any, str] = {}  # the pre-hook's op kind -> its name
        # while the groups' collectives are observed in C++; None: the Python hooks do it all
        self._observe: ObserverApi | None = None
        self.observed_in_cpp = 0         # groups whose collectives C++ hooks observe

    # -- installation ------------------------------------------------------------------------------
    def install(self) -> Callable[[], None]:
        pg_cls = self.dist.distributed_c10d.ProcessGroup
        if hasattr(pg_cls, "register_pre_hook") and hasattr(pg_cls, "register_post_hook"):
            self.mode = "hooks"
            if self.observe_in_cpp:
                self._observe = observer_api(self.rec)
                if self._observe is not None:
                    self.coll.native_depth = self._observe.wrapper_depth()
        else:
            self._patched.extend(patch_methods(self, pg_cls))
            self.mode = "methods"
        self._patch_wait()
        self.find_groups()
        if self.works.stamps:
            self.coll.works = self.works  # the by-name wrappers' async ops end here too
        return self.uninstall

    def uninstall(self) -> None:
        self.coll.works = None
        self.coll.native_depth = None
        try:
            self.works.poll()  # what completed since the last step boundary is still recorded
        except Exception as err:  # noqa: BLE001
            self.rec.fail(f"process-group works at shutdown: {type(err).__name__}: {err}")
        for pg, _, _, observer in self._seen.values():
            if observer is not None:
                try:
                    observer.detach()
                except Exception:  # noqa: BLE001 - the group is gone already
                    pass
            elif self.mode == "hooks":
                for name in ("unregister_pre_hook", "unregister_post_hook"):
                    try:
                        getattr(pg, name)(HOOK_ID)
                    except Exception:  # noqa: BLE001 - the group is gone already
                        pass
        for cls, name, orig in reversed(self._patched):
            setattr(cls, name, orig)
        self._patched.clear()
        self._seen.clear()

    def find_groups(self) -> None:
        """Hooks the groups made since the last look (the default group and every new_group)."""
        world = getattr(self.dist.distributed_c10d, "_world", None)
        pg_map = getattr(world, "pg_map", None) or {}
        for pg in list(pg_map):
            if id(pg) not in self._seen:
                self._adopt(pg)

    def _adopt(self, pg: Any) -> None:
        # [group, ops seen by the Python hooks, its sequence number at adoption, GroupObserver]
        entry = [pg, 0, sequence_number(pg), None]
        if self.leave_nccl and is_pure_nccl(self.dist, pg):
            self._native[id(pg)] = (pg, entry[2])
            entry[2] = None  # not ours to check
        elif self.mode == "hooks" and self._observe is not None and self._observe_group(pg, entry):
            self.observed_in_cpp += 1
        elif self.mode == "hooks":
            key = id(pg)  # the hook arguments do not name the group: each group gets its own
            try:
                pg.register_pre_hook(HOOK_ID, lambda args: self._pre_hook(key, args))
                pg.register_post_hook(HOOK_ID, lambda args: self._post_hook(args))
            except Exception:  # noqa: BLE001 - e.g. a fake group: its ops stay unseen, counted
                entry[2] = None
        self._seen[id(pg)] = entry

    def _observe_group(self, pg: Any, entry: list) -> bool:
        """C++ pre/post hooks on pg; False: the Python hooks instead."""
        info = self.groups.info(pg)
        if info is None:
            return False
        key = id(pg)

        def p2p_pre(name: str, is_async: bool, nbytes: int, root: int) -> None:
            seen = self._seen.get(key)
            self._p2p_pre(seen[0] if seen is not None else None, name, is_async, nbytes, root)

        try:
            entry[3] = self._observe.observe(pg, info, self.rec.train_thread, HOOK_ID, p2p_pre,
                                             self._post)
        except Exception:  # noqa: BLE001 - e.g. a group of a Python backend: the Python hooks
            return False
        return True

    def _patch_wait(self) -> None:
        work_cls = getattr(self.dist.distributed_c10d, "Work", None)
        orig = getattr(work_cls, "wait", None)
        if orig is None or getattr(orig, "_straggler_probe", False):
            return
        rec = self.rec
        owner = self

        def wait(work: Any, *args: Any, **kwargs: Any) -> Any:
            if rec.failed:
                return orig(work, *args, **kwargs)
            cut = threading.get_ident() == rec.train_thread and rec.in_region
            if not cut and id(work) not in owner.works:
                result = orig(work, *args, **kwargs)
                if owner._observe is not None:  # a futureless collective the C++ hooks issued
                    owner._observe.work_waited(work, now_ns())
                return result
            # Cut even when the work is done already (an empty wait): every rank then records
            # the same pieces, and the analysis compares like with like across ranks
            start = now_ns()
            result = orig(work, *args, **kwargs)
            try:
                end = now_ns()
                owner.finish_work(work, end, start)
                if cut:
                    rec.split_at_wait(start, end)
            except Exception as err:  # noqa: BLE001
                rec.fail(f"Work.wait: {type(err).__name__}: {err}")
            return result

        wait._straggler_probe = True  # type: ignore[attr-defined]
        wait.__doc__ = getattr(orig, "__doc__", None)
        self._patched.append((work_cls, "wait", orig))
        work_cls.wait = wait

    # -- what torch calls ----------------------------------------------------------------------------
    def _count(self, pg: Any) -> bool:
        """Counts one op seen on pg; True when a by-name wrapper on this thread records it."""
        entry = self._seen.get(id(pg))
        if entry is None:
            self._adopt(pg)
            entry = self._seen[id(pg)]
            entry[2] = None if entry[2] is None else entry[2] - 1  # this op is after the baseline
        entry[1] += 1
        # The thread's own attribute dict: a getattr with a default raises and catches an
        # AttributeError inside on threads that never set it, which costs the cold interpreter of
        # a backward ~4 µs a bucket (bench/README.md, the lockstep's DDP rows).
        return bool(self.coll.tls.__dict__.get("depth", 0))

    def _pending(self) -> list:
        """This thread's ops issued and awaiting their post-hook (None: not recorded here)."""
        pending = self._tls.__dict__.get("pending")
        if pending is None:
            pending = self._tls.pending = []
        return pending

    def _begin(self, pg: Any) -> list | None:
        """An op issued on pg (None: not recorded here): the works done by now end first; the
        pending list to append it to, or None when it is not recorded (None appended for it)."""
        pending = self._pending()
        if self.works.polling:
            self.works.poll()  # a bucket done by the next one's launch ended by now
        if pg is None or self.rec.failed:
            pending.append(None)
            return None
        return pending

    def _p2p_pre(self, pg: Any, name: str, is_async: bool, nbytes: int, root: int) -> None:
        """A send or receive the C++ hooks hand over (not inside a by-name wrapper; counted)."""
        try:
            pending = self._begin(pg)
            if pending is not None:
                pending.append((pg, name, now_ns(), bool(is_async), int(nbytes), int(root)))
        except Exception as err:  # noqa: BLE001 - never raise into torch's collective call
            self.rec.fail(f"process-group pre-hook: {type(err).__name__}: {err}")

    def _pre_hook(self, key: int, args: Any) -> None:
        try:
            entry = self._seen.get(key)
            pg = entry[0] if entry is not None else None
            inside_wrapper = self._count(pg) if pg is not None else True
            pending = self._begin(None if inside_wrapper else pg)
            if pending is None:
                return
            op = args.name  # an enum: its text is made once per kind, not per bucket
            name = self._op_names.get(op)
            if name is None:
                name = self._op_names[op] = str(getattr(op, "name", op))
            pending.append((pg, name, now_ns(), bool(args.async_op),
                            payload_bytes(list(args.input_tensors)), int(args.root)))
        except Exception as err:  # noqa: BLE001 - never raise into torch's collective call
            self.rec.fail(f"process-group pre-hook: {type(err).__name__}: {err}")

    def _post_hook(self, args: Any) -> None:
        self._post(args.work)

    def _post(self, work: Any) -> None:
        pending = self._tls.__dict__.get("pending")
        op = pending.pop() if pending else None
        if op is None:
            return
        try:
            pg, name, start, is_async, nbytes, root = op
            self._record(pg, name, start, is_async, nbytes, root, work)
        except Exception as err:  # noqa: BLE001
            self.rec.fail(f"process-group post-hook: {type(err).__name__}: {err}")

    # -- recording -----------------------------------------------------------------------------------
    def _record(self, pg: Any, name: str, start: int, is_async: bool, nbytes: int, root: int,
                work: Any) -> None:
        kind_coll = self._kinds.get(name, False)
        if kind_coll is False:
            kind_coll = self._kinds[name] = classify(name)
        info = self.groups.info(pg)
        if kind_coll is None or info is None:
            return
        kind, coll = kind_coll
        rec = self.rec
        on_train = threading.get_ident() == rec.train_thread
        if kind == N.COLLECTIVE:
            seq = self.groups.next_coll(info)
            stream = N.STREAM_MAIN if (on_train and not is_async) else N.STREAM_ASYNC_COMM
            peer = -1
        else:
            peer = self.groups.to_global(info, root)
            if peer < 0:
                return  # a receive from any source: the pair cannot be matched
            me = self.coll.rank
            src, dst = (me, peer) if kind == N.SEND else (peer, me)
            seq = self.groups.next_p2p(info, src, dst)
            stream = N.STREAM_MAIN if (on_train and not is_async) else (
                N.STREAM_P2P_SEND if kind == N.SEND else N.STREAM_P2P_RECV)
            if on_train:
                rec.p2p_boundary()
        name_id = self._names.get(name)
        if name_id is None:
            name_id = self._names[name] = rec.intern("pg:" + name.lower())
        self.recorded += 1

        def done(end_ns: int, wait_start: int | None = None) -> None:
            begin = futureless_recv_start(rec, kind, start, wait_start)
            try:  # maybe on the backend's thread: nothing may reach torch's callback
                rec.record_comm(kind, coll, begin, max(begin, end_ns), stream, info.group_id,
                                seq, nbytes, peer, info.size, name_id)
            except Exception as err:  # noqa: BLE001
                rec.fail(f"recording a completed {name}: {type(err).__name__}: {err}")

        if work is None:
            done(now_ns())  # the backend finished it inside the call (synchronous at C++ level)
            return
        # Stamped in C++ where _c10d is built (open_works.py); None there means no future.
        stamp = self.works.stamp(work)
        fut = None
        if stamp is NO_STAMP:
            stamp = None
            try:
                fut = work.get_future()
            except Exception:  # noqa: BLE001 - gloo's p2p and reduce-scatter work have no future
                fut = None
        # Without a future it ends when a wait() on it returns (FSDP waits for each
        # reduce-scatter); ended at its issue it would leave that wait, the slow rank's lateness,
        # as an unexplained gap on the waiting rank. A bucket of a backward is polled.
        poll = on_train and is_async and kind == N.COLLECTIVE and rec.in_backward
        self.works.add(work, done, fut, poll, rec.step, stamp)

    def finish_work(self, work: Any, end_ns: int, wait_start: int | None = None) -> None:
        """A wait on `work` (begun at wait_start) returned: if it is ours and still open, it
        ended by now (a futureless receive: collectives.futureless_recv_start)."""
        self.works.finish(id(work), work, end_ns, wait_start)
        if self._observe is not None:
            self._observe.work_waited(work, end_ns)

    def after_backward(self) -> None:
        """The training thread's backward returned: DDP has waited for its buckets."""
        if self.works.polling:
            self.works.poll()
        if self._observe is not None:
            self._observe.sweep()

    # -- what went by unseen -------------------------------------------------------------------------
    def at_step(self, step: int) -> None:
        """At a step boundary: new groups get hooks; collectives nobody saw are said once."""
        self.find_groups()
        self.works.settle(step)
        if self._observe is not None:
            self._observe.settle(step)
            for *_, observer in self._seen.values():
                failure = observer.failure if observer is not None else ""
                if failure:
                    self.rec.fail(failure)
                    break
        if self._warned:
            return
        for pg, seen, baseline, observer in self._seen.values():
            if baseline is None:
                continue
            if observer is not None:
                seen = observer.seen
            now = sequence_number(pg)
            if now is None:
                continue
            missed = now - baseline - seen
            if missed > 0:
                self._warned = True
                self.unseen = missed
                warnings.warn(
                    f"straggler_probe: {missed} collective(s) on process group "
                    f"{group_name(pg)} went by without the probe seeing them (by step {step}; "
                    f"a path below its {self.mode} layer, such as a C++ caller); their time "
                    "counts as the compute around them, so waiting ranks may look slow",
                    RuntimeWarning, stacklevel=2)
                return

    def native_ops(self) -> int:
        """Operations issued so far on the groups left to the NCCL layer (it records them)."""
        return sum((sequence_number(pg) or 0) - (at or 0) for pg, at in self._native.values())

    def stats(self) -> dict[str, Any]:
        observed = [e[3].stats() for e in self._seen.values() if e[3] is not None]
        return {"mode": self.mode, "groups": len(self._seen),
                "recorded": self.recorded + sum(o["recorded"] for o in observed),
                "seen": sum(e[1] for e in self._seen.values()) + sum(o["seen"] for o in observed),
                "unseen": self.unseen,
                "ended_unwaited": (self.works.ended_unwaited
                                   + sum(o["ended_unwaited"] for o in observed)),
                "polled_ends": self.works.polled_ends,
                "stamped_ends": self.works.stamped_ends, "work_end_stamps": self.works.stamps,
                "left_to_nccl": len(self._native),
                "observed_in_cpp": self.observed_in_cpp,
                "cpp_future_ends": sum(o["future_ends"] + o["seen_ends"] for o in observed),
                "cpp_waited_ends": sum(o["waited_ends"] for o in observed)}
