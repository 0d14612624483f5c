"""DDP models: their gradient-bucket all-reduces, and where their backward's compute ends.

DDP launches a bucket's all-reduce from C++ (its reducer) unless a comm hook is set. Who sees it:

- NCCL: the NCCL profiler plugin / interposer of libstraggler_probe.so, below DDP, with GPU
  times. A Python comm hook would only add its cost (a Python call and a future callback per
  bucket, ~0.3 ms per bucket on a launch-bound GPU step) and could never be taken back (DDP has
  no unregister), so none is ever registered on an NCCL model.
- gloo on a torch whose ProcessGroup has pre/post hooks (2.15): torch calls them for the
  reducer's C++ all-reduces too (hooks/process_group.py records them): nothing to add.
- gloo on an older torch: nothing below DDP sees the buckets from Python. There (ddp_comm_hook=
  auto, or =on anywhere off NCCL) the probe owns the comm hook: a user's hook is wrapped when
  registered; a model with none gets the equivalent of torch's allreduce_hook (divide by the
  group size, all-reduce async), timed. Each bucket is one COLLECTIVE all-reduce on the async-comm
  stream, from launch to the completion of its future, numbered in the group like any other
  collective. A builtin C++ hook cannot be wrapped: we say so once. With ddp_comm_hook=off the
  buckets go unseen there (the unseen-collectives check of process_group.py says so once).

Every DDP model also makes the backward end where the autograd engine has run the graph, not
where backward() returns after DDP's wait for its buckets (hooks/autograd.py).
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

from .. import _native as N
from .._timing import now_ns
from .collectives import CollectiveHooks, payload_bytes


def reduces_over_nccl(dist: Any, module: Any) -> bool:
    """Whether a DDP model's process group reduces its (CUDA) gradients with NCCL."""
    try:
        backend = str(dist.get_backend(module.process_group)).lower()
    except Exception:  # noqa: BLE001 - a group torch cannot name: judge by the device
        backend = ""
    if "nccl" not in backend:
        return False
    if backend == "nccl":
        return True
    # a mixed backend ("cpu:gloo,cuda:nccl"): NCCL reduces the model's CUDA gradients
    return getattr(module, "device_type", "") == "cuda"


class DdpHooks:
    def __init__(self, recorder: Any, collectives: CollectiveHooks | None, ddp_cls: Any, dist: Any,
                 mode: str, pg_layer_sees_buckets: bool):
        """mode: the ddp_comm_hook setting; pg_layer_sees_buckets: the ProcessGroup layer sees the
        reducer's C++ all-reduces (torch's ProcessGroup pre/post hooks)."""
        self.rec = recorder
        self.coll = collectives
        self.ddp_cls = ddp_cls
        self.dist = dist
        self.groups = collectives.groups if collectives is not None else None
        self.times_buckets = mode == "on" or (mode == "auto" and not pg_layer_sees_buckets)
        self.models_seen = 0
        self.hooks_registered = 0
        self._orig_register: Callable[..., Any] | None = None
        self._orig_all_reduce = dist.distributed_c10d.all_reduce
        while getattr(self._orig_all_reduce, "__wrapped__", None) is not None and \
                getattr(self._orig_all_reduce, "_straggler_probe", False):
            self._orig_all_reduce = self._orig_all_reduce.__wrapped__
        self._seen: set[int] = set()

    def install(self) -> Callable[[], None]:
        if not self.times_buckets or self.groups is None:
            return self.uninstall  # DDP's class stays as torch made it
        cls = self.ddp_cls
        orig = cls.register_comm_hook
        self._orig_register = orig
        owner = self

        def register_comm_hook(ddp_self: Any, state: object, hook: Callable) -> None:
            if getattr(hook, "_straggler_probe", False) or reduces_over_nccl(owner.dist, ddp_self):
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
        """Called once per top-level module found by the forward hooks (before its first
        backward): a DDP model's backward ends at the engine's end from now on, and one whose
        buckets only a comm hook can see gets the timed equivalent of the default one."""
        if not isinstance(module, self.ddp_cls) or id(module) in self._seen:
            return
        self._seen.add(id(module))
        self.models_seen += 1
        self.rec.ddp_backward_ends_at_engine = True
        if not self.times_buckets or self._orig_register is None:
            return
        if reduces_over_nccl(self.dist, module) or getattr(module, "_comm_hooks", None):
            # NCCL: seen below DDP. A user hook registered before init(): its dist calls are
            # still recorded by the collective wrappers, one op per call instead of per bucket.
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
        name_id = rec.intern("ddp-bucket-all-reduce")
        self.hooks_registered += 1
        if hook is _default_allreduce_hook_marker:
            hook = self._default_hook

        def straggler_probe_timed_hook(state: object, bucket: Any) -> Any:
            if rec.failed or groups is None:
                return hook(state, bucket)
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
