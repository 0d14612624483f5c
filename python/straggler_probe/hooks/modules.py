"""Forward per micro-batch, found without model changes.

During the first training step a global forward pre-hook finds the top-level modules: those
whose forward starts while no other module's forward is running (DDP's wrapper, a bare model, a
loss module called at top level). Each gets its own forward pre/post hooks and the global hooks
go away after that step, so that later steps pay for two hooks per micro-batch, not one per
submodule. Forwards under torch.no_grad() (evaluation) are not training micro-batches.
"""
from __future__ import annotations

import importlib
import threading
from typing import Any, Callable

from . import seqlens


class ModuleHooks:
    def __init__(self, recorder: Any, torch_mod: Any, auto_seq_lens: bool,
                 on_top_level: Callable[[Any], None] | None = None):
        self.rec = recorder
        self.torch = torch_mod
        self.auto_seq_lens = auto_seq_lens
        self.on_top_level = on_top_level
        self._depth = threading.local()
        self._handles: list[Any] = []
        self._global: list[Any] = []
        self._hooked: set[int] = set()
        self._open = threading.local()  # .stack: per nested top-level call, is it recorded
        self.annotated: set[int] = set()  # micro-batches annotated by the user this step
        self.pending_seq_lens: list[int] | None = None  # from the data loader's batch

    def install(self) -> Callable[[], None]:
        mm = importlib.import_module("torch.nn.modules.module")
        self._global = [mm.register_module_forward_pre_hook(self._discover_pre),
                        mm.register_module_forward_hook(self._discover_post, always_call=True)]
        return self.uninstall

    def uninstall(self) -> None:
        self.end_discovery()
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def end_discovery(self) -> None:
        for h in self._global:
            h.remove()
        self._global.clear()

    # -- discovery (first step only) ---------------------------------------------------------------
    def _discover_pre(self, module: Any, args: tuple) -> None:
        depth = getattr(self._depth, "n", 0)
        self._depth.n = depth + 1
        if depth or id(module) in self._hooked or self.rec.failed:
            return
        if not self.torch.is_grad_enabled() or threading.get_ident() != self.rec.train_thread:
            return
        self._hooked.add(id(module))
        self._handles.append(module.register_forward_pre_hook(self._pre, with_kwargs=True))
        self._handles.append(module.register_forward_hook(self._post, always_call=True))
        if self.on_top_level is not None:
            self.on_top_level(module)
        # The pre-hook just added does not run for this call (torch collected hooks already);
        # the post-hook will, so open the region here.
        self._pre(module, args, {})

    def _discover_post(self, module: Any, args: tuple, output: Any) -> None:
        self._depth.n = max(0, getattr(self._depth, "n", 1) - 1)

    # -- per top-level module ----------------------------------------------------------------------
    def _pre(self, module: Any, args: tuple, kwargs: dict) -> None:
        rec = self.rec
        recorded = False
        if not rec.failed and self.torch.is_grad_enabled():
            try:
                recorded = rec.forward_begin()
                if recorded and self.auto_seq_lens:
                    self._auto_annotate(args, kwargs)
            except Exception as err:  # noqa: BLE001
                rec.fail(f"forward pre-hook: {type(err).__name__}: {err}")
                recorded = False
        stack = getattr(self._open, "stack", None)
        if stack is None:
            stack = self._open.stack = []
        stack.append(recorded)
        return None

    def _post(self, module: Any, args: tuple, output: Any) -> None:
        stack = getattr(self._open, "stack", None)
        recorded = stack.pop() if stack else False
        if recorded and not self.rec.failed:
            try:
                self.rec.forward_end()
            except Exception as err:  # noqa: BLE001
                self.rec.fail(f"forward hook: {type(err).__name__}: {err}")
        return None

    def _auto_annotate(self, args: tuple, kwargs: dict) -> None:
        mb = self.rec.current_microbatch
        if mb in self.annotated:
            return
        lengths = seqlens.from_call(args, kwargs)
        if lengths is None:
            lengths, self.pending_seq_lens = self.pending_seq_lens, None
        if lengths:
            self.annotated.add(mb)
            self.rec.annotate(mb, "seq_lens", seqlens.encode(lengths))

    def new_step(self) -> None:
        self.annotated.clear()
