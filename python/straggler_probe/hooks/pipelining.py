"""torch.distributed.pipelining: where this rank sits, and what each stage computation and p2p op
of a schedule belongs to.

Every schedule (GPipe, 1F1B, interleaved, zero-bubble, torch >= 2.4) drives its stages through
the same `_PipelineStageBase` methods, so those are wrapped rather than each schedule:
- `forward_one_chunk(mb)` / `backward_one_chunk(mb)` / `backward_weight_one_chunk(mb)` are the
  stage's forward and backward of micro-batch `mb`, timed as such (a schedule runs several
  micro-batches, and in interleaved schedules several stages, per step; counting forwards would
  number them wrongly);
- `get_{fwd,bwd}_{send,recv}_ops(mb)` build the P2POps the schedule then issues (batched, fused
  with others, sent long before they are waited for): each op's (direction, peer) is queued with
  `mb`, and the collective hooks take it when the op is issued (Recorder.p2p_boundary);
- the first forward of a stage tells the probe the stage's position: pipeline rank (the stage's
  place in its pipeline group, which for interleaved schedules holds several stages) and the
  pipeline replica from the group's ranks (_topology.pipeline_replica).

torch.distributed.pipelining costs seconds to import (it pulls in torch._dynamo), so it is never
imported here: the methods are wrapped when the job imports it (at once if it already has).
"""
from __future__ import annotations

import collections
import functools
import importlib.abc
import importlib.util
import sys
import threading
import warnings
from typing import Any, Callable

from .. import _native as N
from .. import _topology
from .autograd import run_as_backward

STAGE_MODULE = "torch.distributed.pipelining.stage"
_MAX_QUEUED = 1024  # per (direction, peer): ops built but never issued do not pile up


class P2pTags:
    """Micro-batch of each p2p op a schedule built, in the order it built them, per (kind, peer):
    a schedule issues the ops of one direction to one peer in the order it built them."""

    def __init__(self) -> None:
        self._queues: dict[tuple[int, int], collections.deque[int]] = {}
        self.dropped = 0

    def add(self, kind: int, peer: int, mb: int) -> None:
        q = self._queues.setdefault((kind, peer), collections.deque())
        if len(q) >= _MAX_QUEUED:
            q.popleft()
            self.dropped += 1
        q.append(mb)

    def take(self, kind: int, peer: int) -> int | None:
        q = self._queues.get((kind, peer))
        return q.popleft() if q else None


class PipeliningHooks:
    def __init__(self, recorder: Any, torch_mod: Any, dist: Any,
                 set_topology: Callable[[int | None, int], None]):
        self.rec = recorder
        self.torch = torch_mod
        self.dist = dist
        self.set_topology = set_topology
        self.tags = P2pTags()
        self._patched: list[tuple[Any, str, Any]] = []
        self._finder: _AfterImport | None = None
        self._located: set[int] = set()

    def install(self) -> Callable[[], None]:
        self.rec.p2p_tags = self.tags
        module = sys.modules.get(STAGE_MODULE)
        if module is not None:
            self._patch(module)
        else:
            self._finder = _AfterImport(STAGE_MODULE, self._patch)
            sys.meta_path.insert(0, self._finder)
        return self.uninstall

    def uninstall(self) -> None:
        if self._finder is not None:
            self._finder.cancel()
            self._finder = None
        for cls, name, orig in reversed(self._patched):
            setattr(cls, name, orig)
        self._patched.clear()
        self.rec.p2p_tags = None

    def _patch(self, module: Any) -> None:
        cls = getattr(module, "_PipelineStageBase", None)
        if cls is None:
            warnings.warn("straggler_probe: this torch.distributed.pipelining has no "
                          "_PipelineStageBase; pipeline stages are timed as plain modules and "
                          "their position is not inferred (pass pp_stage= and dp_rank= to init())",
                          RuntimeWarning, stacklevel=2)
            return
        if self._patched:
            return
        wrappers = {"forward_one_chunk": self._forward,
                    "backward_one_chunk": self._backward,
                    "backward_weight_one_chunk": self._backward,
                    "get_fwd_send_ops": self._tagging, "get_bwd_send_ops": self._tagging,
                    "get_fwd_recv_ops": self._tagging, "get_bwd_recv_ops": self._tagging}
        for name, make in wrappers.items():
            orig = cls.__dict__.get(name)
            if orig is None or getattr(orig, "_straggler_probe", False):
                continue
            wrapper = functools.wraps(orig)(make(orig))
            wrapper._straggler_probe = True  # type: ignore[attr-defined]
            self._patched.append((cls, name, orig))
            setattr(cls, name, wrapper)

    # -- where this rank sits -------------------------------------------------------------------
    def _locate(self, stage: Any) -> None:
        if id(stage) in self._located:
            return
        self._located.add(id(stage))
        try:
            group = getattr(stage, "group", None)
            ranks = list(self.dist.distributed_c10d.get_process_group_ranks(
                group if group is not None else self.dist.group.WORLD))
            index = int(stage.stage_index)
            pp_rank = getattr(stage, "stage_index_to_group_rank", {}).get(index)
            if pp_rank is None:
                pp_rank = index % len(ranks)
            replica = _topology.pipeline_replica(ranks, self.dist.get_world_size())
        except Exception as err:  # noqa: BLE001 - recording goes on; only the layout is unknown
            warnings.warn(f"straggler_probe: the pipeline stage's position was not inferred "
                          f"({type(err).__name__}: {err}); pass pp_stage= and dp_rank= to init()",
                          RuntimeWarning, stacklevel=3)
            return
        self.set_topology(replica, int(pp_rank))

    # -- wrappers ---------------------------------------------------------------------------------
    def _active(self) -> bool:
        rec = self.rec
        return not rec.failed and threading.get_ident() == rec.train_thread

    def _forward(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        rec, torch = self.rec, self.torch

        def forward_one_chunk(stage: Any, *args: Any, **kwargs: Any) -> Any:
            if not self._active() or not torch.is_grad_enabled():
                return orig(stage, *args, **kwargs)
            recorded = False
            try:
                self._locate(stage)
                rec.close_forward()  # the previous micro-batch's forward (and loss) is over
                rec.fwd_mb = _chunk_id(args, kwargs, "fwd_chunk_id")
                recorded = rec.forward_begin()
            except Exception as err:  # noqa: BLE001
                rec.fail(f"pipeline forward: {type(err).__name__}: {err}")
            try:
                return orig(stage, *args, **kwargs)
            finally:
                if recorded and not rec.failed:
                    rec.forward_end()

        return forward_one_chunk

    def _backward(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        rec = self.rec

        def backward_one_chunk(stage: Any, *args: Any, **kwargs: Any) -> Any:
            if (not self._active() or rec.in_backward
                    or not getattr(stage, "has_backward", True)):
                return orig(stage, *args, **kwargs)
            try:
                rec.bwd_mb = _chunk_id(args, kwargs, "bwd_chunk_id")
            except Exception as err:  # noqa: BLE001
                rec.fail(f"pipeline backward: {type(err).__name__}: {err}")
                return orig(stage, *args, **kwargs)
            return run_as_backward(rec, "pipeline backward", lambda: orig(stage, *args, **kwargs))

        return backward_one_chunk

    def _tagging(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        rec, tags = self.rec, self.tags
        chunk_param = "fwd_chunk_id" if "fwd" in orig.__name__ else "bwd_chunk_id"

        def get_ops(stage: Any, *args: Any, **kwargs: Any) -> Any:
            ops = orig(stage, *args, **kwargs)
            if rec.failed:
                return ops
            try:
                mb = _chunk_id(args, kwargs, chunk_param)
                for op in ops:
                    name = getattr(op.op, "__name__", "")
                    tags.add(N.SEND if name == "isend" else N.RECV, int(op.peer), mb)
            except Exception as err:  # noqa: BLE001
                rec.fail(f"pipeline p2p ops: {type(err).__name__}: {err}")
            return ops

        return get_ops


def _chunk_id(args: tuple, kwargs: dict, name: str) -> int:
    return int(args[0] if args else kwargs[name])


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `on_import(module)` right after `name` is first imported (the import system's own
    hook: the finder lets the normal finders locate the module and wraps its loader)."""

    def __init__(self, name: str, on_import: Callable[[Any], None]):
        self.name = name
        self.on_import: Callable[[Any], None] | None = on_import

    def cancel(self) -> None:
        self.on_import = None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name or self.on_import is None:
            return None
        on_import = self.on_import
        self.cancel()  # once; and find_spec below must not find this finder again
        spec = importlib.util.find_spec(fullname)
        loader = getattr(spec, "loader", None)
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_then_patch(module: Any) -> None:
            exec_module(module)
            try:
                on_import(module)
            except Exception as err:  # noqa: BLE001 - the job's import must not fail because of us
                warnings.warn(f"straggler_probe: pipeline stages are not hooked "
                              f"({type(err).__name__}: {err})", RuntimeWarning, stacklevel=2)

        loader.exec_module = exec_then_patch  # type: ignore[union-attr]
        return spec
