"""Backward per micro-batch.

torch.autograd.backward is wrapped (Tensor.backward calls it by module attribute, so both are
covered); the backward runs from the call to the moment the autograd engine has run the graph.
That moment is not always when backward() returns: DDP queues a final callback that waits for
its bucket all-reduces, so timing the call would charge the slowest rank's lateness to every
rank's backward (the victim would look like the culprit). So once a DDP model has been seen
(hooks/ddp.py), the engine's end is taken from an autograd final callback queued before DDP's
(final callbacks run in queueing order; DDP queues its own when the last bucket is ready): a
pre-hook on the root's grad_fn, the first node the engine runs, queues it. A backward without
DDP ends when the call returns, and pays for no hook.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable


class AutogradHooks:
    def __init__(self, recorder: Any, torch_mod: Any):
        self.rec = recorder
        self.torch = torch_mod
        self._orig: Callable[..., Any] | None = None

    def install(self) -> Callable[[], None]:
        autograd = self.torch.autograd
        orig = autograd.backward
        if getattr(orig, "_straggler_probe", False):
            return lambda: None
        self._orig = orig
        rec = self.rec
        engine_end = EngineEnd(rec, queue_callback_fn(self.torch))

        @functools.wraps(orig)
        def backward(*args: Any, **kwargs: Any) -> Any:
            if rec.failed or rec.in_backward or threading.get_ident() != rec.train_thread:
                return orig(*args, **kwargs)
            roots = args[0] if args else kwargs.get("tensors")
            return run_as_backward(rec, "backward", lambda: orig(*args, **kwargs),
                                   lambda: engine_end.watch(roots))

        backward._straggler_probe = True  # type: ignore[attr-defined]
        autograd.backward = backward
        return self.uninstall

    def uninstall(self) -> None:
        if self._orig is not None:
            self.torch.autograd.backward = self._orig
            self._orig = None


class EngineEnd:
    """Queues Recorder.engine_done as the backward's first final callback (see the docstring)."""

    def __init__(self, rec: Any, queue_callback: Callable[[Callable[[], None]], None]):
        self.rec = rec
        self._queue_callback = queue_callback
        self._handle: Any = None  # the last pre-hook: gone before the next (a retained graph)

    def watch(self, roots: Any) -> None:
        if not self.rec.ddp_backward_ends_at_engine:
            return
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        root = roots[0] if isinstance(roots, (list, tuple)) and roots else roots
        node = getattr(root, "grad_fn", None)
        if node is not None:
            self._handle = node.register_prehook(self._on_root)

    def _on_root(self, grad_outputs: Any) -> None:
        # runs inside the engine (a device thread on CUDA): nothing may reach the backward
        rec = self.rec
        try:
            if not rec.failed and rec.engine_end_wanted():
                self._queue_callback(rec.engine_done)
        except Exception as err:  # noqa: BLE001
            rec.fail(f"backward engine end: {type(err).__name__}: {err}")


def run_as_backward(rec: Any, label: str, call: Callable[[], Any],
                    before: Callable[[], None] | None = None) -> Any:
    """Runs call() as the backward of the recorder's current micro-batch (autograd.backward here,
    a pipeline stage's backward_one_chunk in hooks/pipelining.py); before() runs once it has begun.
    A failure of the probe's own bookkeeping is one rec.fail(); the call itself always runs, and
    its exceptions pass."""
    try:
        start = rec.backward_begin()
        if before is not None:
            before()
    except Exception as err:  # noqa: BLE001
        rec.in_backward = False
        rec.fail(f"{label}: {type(err).__name__}: {err}")
        return call()
    ok = False
    try:
        result = call()
        ok = True
        return result
    finally:
        try:
            if ok:
                rec.backward_end(start)
            else:
                rec.in_backward = False
        except Exception as err:  # noqa: BLE001
            rec.fail(f"{label}: {type(err).__name__}: {err}")


def queue_callback_fn(torch_mod: Any) -> Callable[[Callable[[], None]], None]:
    """torch.autograd.graph.queue_callback where it exists, the engine's method otherwise."""
    graph = getattr(torch_mod.autograd, "graph", None)
    fn = getattr(graph, "queue_callback", None)
    return fn if fn is not None else torch_mod.autograd.Variable._execution_engine.queue_callback
