"""Backward per micro-batch.

torch.autograd.backward is wrapped (Tensor.backward calls it by module attribute, so both are
covered). The backward's compute ends when the autograd engine has run the graph, which is not
when backward() returns: DDP queues a final callback that waits for its bucket all-reduces, so
timing the call would charge the slowest rank's lateness to every rank's backward (the victim
would look like the culprit). A pre-hook on the root's grad_fn queues our own final callback as
the engine starts; final callbacks run in queueing order, so ours runs before DDP's wait.
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
        graph = getattr(torch_mod.autograd, "graph", None)
        self._queue_callback = getattr(graph, "queue_callback", None) or \
            torch_mod.autograd.Variable._execution_engine.queue_callback

    def install(self) -> Callable[[], None]:
        autograd = self.torch.autograd
        orig = autograd.backward
        if getattr(orig, "_straggler_probe", False):
            return lambda: None
        self._orig = orig
        rec = self.rec
        queue_callback = self._queue_callback

        @functools.wraps(orig)
        def backward(*args: Any, **kwargs: Any) -> Any:
            if rec.failed or rec.in_backward or threading.get_ident() != rec.train_thread:
                return orig(*args, **kwargs)
            try:
                start = rec.backward_begin()
                done: list[Any] = []
                handle = _hook_root(args, kwargs, lambda: done.append(rec.timer.stamp()),
                                    queue_callback)
            except Exception as err:  # noqa: BLE001
                rec.in_backward = False
                rec.fail(f"backward: {type(err).__name__}: {err}")
                return orig(*args, **kwargs)
            ok = False
            try:
                result = orig(*args, **kwargs)
                ok = True
                return result
            finally:
                try:
                    if handle is not None:
                        handle.remove()
                    if ok:
                        rec.backward_end(start, done[0] if done else rec.timer.stamp())
                    else:
                        rec.in_backward = False
                except Exception as err:  # noqa: BLE001
                    rec.fail(f"backward: {type(err).__name__}: {err}")

        backward._straggler_probe = True  # type: ignore[attr-defined]
        autograd.backward = backward
        return self.uninstall

    def uninstall(self) -> None:
        if self._orig is not None:
            self.torch.autograd.backward = self._orig
            self._orig = None


def _hook_root(args: tuple, kwargs: dict, on_done: Callable[[], None],
               queue_callback: Callable[[Callable[[], None]], None]) -> Any:
    tensors = args[0] if args else kwargs.get("tensors")
    if not isinstance(tensors, (list, tuple)):
        tensors = (tensors,)
    for t in tensors:
        fn = getattr(t, "grad_fn", None)
        if fn is not None and hasattr(fn, "register_prehook"):
            def prehook(grad_outputs: Any) -> None:
                queue_callback(on_done)
                return None
            return fn.register_prehook(prehook)
    return None
