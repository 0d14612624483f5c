"""The optimizer's step: its region, and (steps=auto) the step boundary.

Uses torch's global optimizer step hooks (every Optimizer instance, torch >= 2.0). With several
optimizers stepping per iteration, the boundary follows the one that steps last before the next
forward, learnt in the first iteration; until then the first optimizer step ends step 0.

optimizer.step(closure) (Lightning's automatic optimisation, LBFGS) runs forward and backward
inside the step call, and with DDP the closure's backward returns only after DDP has waited for
its buckets. Timed from the call, the optimizer would own that wait, so a fast rank's optimizer
would absorb the slow rank's lateness. The pre-hook therefore hands torch a wrapped closure
(pre-hooks may replace the call's arguments), and the optimizer region is what runs after the
closure's last return (before it when there is no closure call): the closure's forward and
backward are recorded as what they are, and the wait between them and the optimizer stays a
wait. (The optimizer's own work between two closure calls, LBFGS's line search, is not recorded:
a gap in the step, not an op.)
"""
from __future__ import annotations

import importlib
import threading
from typing import Any, Callable


class OptimizerHooks:
    def __init__(self, recorder: Any, torch_mod: Any, on_step_end: Callable[[], None] | None):
        self.rec = recorder
        self.torch = torch_mod
        self.on_step_end = on_step_end  # None: steps are marked by straggler_probe.step()
        self._handles: list[Any] = []
        self._starts: dict[int, Any] = {}
        self._marker: int | None = None       # id of the optimizer whose step ends an iteration
        self._stepped: list[int] = []         # optimizers stepped since the last forward
        self._marked_this_iteration = False

    def install(self) -> Callable[[], None]:
        opt = importlib.import_module("torch.optim.optimizer")  # a submodule, not an attribute
        pre = getattr(opt, "register_optimizer_step_pre_hook", None)
        post = getattr(opt, "register_optimizer_step_post_hook", None)
        if pre is None or post is None:
            raise RuntimeError("this torch has no global optimizer step hooks (torch >= 2.0 needed); "
                               "use steps='manual' and straggler_probe.step()")
        self._handles = [pre(self._pre), post(self._post)]
        return self.uninstall

    def uninstall(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def forward_started(self) -> None:
        """Called when an iteration's first forward begins: learn which optimizer ends it."""
        self._new_iteration()

    def _new_iteration(self) -> None:
        if self._marker is None and len(set(self._stepped)) > 1:
            self._marker = self._stepped[-1]
        self._stepped.clear()
        self._marked_this_iteration = False

    def _pre(self, optimizer: Any, args: Any, kwargs: Any) -> Any:
        rec = self.rec
        if rec.failed or threading.get_ident() != rec.train_thread:
            return None
        try:
            self._starts[id(optimizer)] = rec.optimizer_begin()
            return self._wrap_closure(optimizer, args, kwargs)
        except Exception as err:  # noqa: BLE001
            rec.fail(f"optimizer pre-hook: {type(err).__name__}: {err}")
            return None

    def _wrap_closure(self, optimizer: Any, args: Any, kwargs: Any) -> Any:
        """(args, kwargs) with the closure wrapped, or None when the call has no closure."""
        # torch passes the step's own arguments, self first: (optimizer, closure?, ...)
        args = tuple(args)
        kwargs = dict(kwargs)
        at = 1 if args and args[0] is optimizer else 0
        if kwargs.get("closure") is not None:
            closure, put = kwargs["closure"], lambda c: (args, dict(kwargs, closure=c))
        elif len(args) > at and callable(args[at]):
            closure, put = args[at], lambda c: (args[:at] + (c,) + args[at + 1:], kwargs)
        else:
            return None
        rec, key, starts = self.rec, id(optimizer), self._starts

        def straggler_probe_closure(*a: Any, **k: Any) -> Any:
            if starts.pop(key, None) is not None:
                rec.optimizer_suspend()  # what ran since the last start is not the optimizer's
            try:
                return closure(*a, **k)
            finally:
                if not rec.failed and threading.get_ident() == rec.train_thread:
                    try:  # the optimizer's own work starts again (its last start counts)
                        starts[key] = rec.optimizer_begin()
                    except Exception as err:  # noqa: BLE001
                        rec.fail(f"optimizer closure: {type(err).__name__}: {err}")

        return put(straggler_probe_closure)

    def _post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        rec = self.rec
        start = self._starts.pop(id(optimizer), None)
        if rec.failed or start is None:
            return
        try:
            rec.optimizer_end(start)
            if id(optimizer) in self._stepped:
                self._new_iteration()  # stepping again without a forward seen: a new iteration
            self._stepped.append(id(optimizer))
            if self.on_step_end is None:
                return
            if self._marker is None:
                if not self._marked_this_iteration:
                    self._marked_this_iteration = True
                    self.on_step_end()
            elif id(optimizer) == self._marker:
                self.on_step_end()
        except Exception as err:  # noqa: BLE001
            rec.fail(f"optimizer hook: {type(err).__name__}: {err}")
