"""DDP's gradient-bucket all-reduces, which DDP launches from C++ unless a comm hook is set.

We time buckets by owning the comm hook: a user's hook is wrapped when registered; a model with
none gets the equivalent of torch's own allreduce_hook (divide by the group size, all-reduce
async), timed. Each bucket is one COLLECTIVE all-reduce on the async-comm stream, from launch to
the completion of its future, numbered in the group like any other collective (every rank
launches buckets in the same order). A builtin C++ hook cannot be wrapped: we say so once.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

from .. import _native as N
from .._timing import now_ns
from .autograd import queue_callback_fn
from .collectives import CollectiveHooks, payload_bytes


class DdpHooks:
    def __init__(self, recorder: Any, collectives: CollectiveHooks | None, ddp_cls: Any, dist: Any,
                 torch_mod: Any):
        self.rec = recorder
        self.coll = collectives
        self.ddp_cls = ddp_cls
        self.dist = dist
        self.groups = collectives.groups if collectives is not None else None
        self._orig_register: Callable[..., Any] | None = None
        self._orig_all_reduce = dist.distributed_c10d.all_reduce
        while getattr(self._orig_all_reduce, "__wrapped__", None) is not None and \
                getattr(self._orig_all_reduce, "_straggler_probe", False):
            self._orig_all_reduce = self._orig_all_reduce.__wrapped__
        self._seen: set[int] = set()
        self._queue_callback = queue_callback_fn(torch_mod)

    def install(self) -> Callable[[], None]:
        cls = self.ddp_cls
        orig = cls.register_comm_hook
        self._orig_register = orig
        owner = self

        def register_comm_hook(ddp_self: Any, state: object, hook: Callable) -> None:
            if getattr(hook, "_straggler_probe", False):
                return orig(ddp_self, state, hook)
            return orig(ddp_self, state, owner._timed(ddp_self, hook))

        register_comm_hook.__doc__ = orig.__doc__
        cls.register_comm_hook = register_comm_hook
        return self.uninstall

    def uninstall(self) -> None:
        if self._orig_register is not None:
            self.ddp_cls.register_comm_hook = self._orig_register
            self._orig_register = None

    def on_top_level(self, module: Any) -> None:
        """Called once per top-level module found by the forward hooks: a DDP model without a
        comm hook gets the timed equivalent of the default one before its first backward."""
        if not isinstance(module, self.ddp_cls) or id(module) in self._seen:
            return
        self._seen.add(id(module))
        if getattr(module, "_comm_hooks", None):
            # Ours, or a user hook registered before init(): its dist calls are still recorded
            # by the collective wrappers, one op per call instead of one per bucket.
            return
        try:
            module.register_comm_hook(module.process_group, _default_allreduce_hook_marker)
        except Exception as err:  # noqa: BLE001 - a builtin hook is set: cannot time its buckets
            warnings.warn("straggler_probe: DDP bucket all-reduces are not timed "
                          f"({type(err).__name__}: {err})", RuntimeWarning, stacklevel=2)

    def _timed(self, ddp_module: Any, hook: Callable) -> Callable:
        rec = self.rec
        groups = self.groups
        coll = self.coll
        queue_callback = self._queue_callback
        name_id = rec.intern("ddp-bucket-all-reduce")
        if hook is _default_allreduce_hook_marker:
            hook = self._default_hook

        def straggler_probe_timed_hook(state: object, bucket: Any) -> Any:
            if rec.failed or groups is None:
                return hook(state, bucket)
            if rec.engine_end_wanted():
                # The first bucket of this backward: the backward's compute ends when the engine
                # has run the graph, before DDP's final callback waits for the buckets.
                queue_callback(rec.engine_done)
            pg = ddp_module.process_group
            info = groups.info(pg)
            start = now_ns()
            if coll is not None:
                with coll.suppressed():  # the hook's own dist calls are this one bucket op
                    fut = hook(state, bucket)
            else:
                fut = hook(state, bucket)
            if info is None:
                return fut
            seq = groups.next_coll(info)
            nbytes = payload_bytes(bucket.buffer())

            def done(f: Any) -> Any:
                try:
                    rec.record_comm(N.COLLECTIVE, N.COLL_ALL_REDUCE, start, now_ns(),
                                    N.STREAM_ASYNC_COMM, info.group_id, seq, nbytes, -1, info.size,
                                    name_id)
                except Exception as err:  # noqa: BLE001
                    rec.fail(f"DDP bucket: {type(err).__name__}: {err}")
                return f.value()

            return fut.then(done)

        # DDP inspects the hook's annotations; ours are strings under `from __future__ import
        # annotations`, which it would reject: the wrapper carries none.
        straggler_probe_timed_hook.__annotations__ = {}
        straggler_probe_timed_hook._straggler_probe = True  # type: ignore[attr-defined]
        straggler_probe_timed_hook.__qualname__ = getattr(hook, "__qualname__", "hook")
        return straggler_probe_timed_hook

    def _default_hook(self, process_group: Any, bucket: Any) -> Any:
        # torch.distributed.algorithms.ddp_comm_hooks.default_hooks.allreduce_hook, with the
        # unwrapped all_reduce so that the bucket is not counted twice.
        group = process_group if process_group is not None else self.dist.group.WORLD
        tensor = bucket.buffer()
        tensor.div_(group.size())
        work = self._orig_all_reduce(tensor, group=group, async_op=True)
        return work.get_future().then(lambda fut: fut.value()[0])


def _default_allreduce_hook_marker(state: object, bucket: Any) -> Any:  # pragma: no cover
    """Placeholder passed to register_comm_hook; _timed swaps in the real default hook."""
    raise AssertionError("replaced before use")
