"""Older torch (no ProcessGroup.register_pre_hook): the collective methods of ProcessGroup
wrapped on the class, names matched by pattern (hooks/process_group.py's fallback). Callers that
reach a group from C++ bypass them; the sight check says so."""
from __future__ import annotations

from typing import Any, Callable

from .. import _native as N
from .._timing import now_ns
from .collectives import payload_bytes
from .op_kinds import METHOD_NAME, classify


def patch_methods(owner: Any, pg_cls: Any) -> list[tuple[Any, str, Any]]:
    """Wraps pg_cls's collective methods for `owner` (a ProcessGroupHooks); returns what was
    patched, (class, name, original), for its uninstall."""
    patched = []
    for name in dir(pg_cls):
        if not METHOD_NAME.match(name) or classify(name) is None:
            continue
        orig = getattr(pg_cls, name)
        if not callable(orig) or getattr(orig, "_straggler_probe", False):
            continue
        wrapper = _method_wrapper(owner, name, orig)
        patched.append((pg_cls, name, orig))
        setattr(pg_cls, name, wrapper)
    return patched


def _method_wrapper(owner: Any, name: str, orig: Callable[..., Any]) -> Callable[..., Any]:
    peer_at = 1 if classify(name)[0] != N.COLLECTIVE else None

    def method(pg: Any, *args: Any, **kwargs: Any) -> Any:
        if owner.rec.failed or owner._count(pg) or id(pg) in owner._native:
            return orig(pg, *args, **kwargs)
        start = now_ns()
        owner.coll.tls.depth = 1  # what it calls in turn is this one op
        try:
            work = orig(pg, *args, **kwargs)
        finally:
            owner.coll.tls.depth = 0
        try:
            root = args[peer_at] if peer_at is not None and len(args) > peer_at else -1
            owner._record(pg, name, start, True, payload_bytes(args[0] if args else None),
                          int(root) if isinstance(root, int) else -1, work)
        except Exception as err:  # noqa: BLE001
            owner.rec.fail(f"process group {name}: {type(err).__name__}: {err}")
        return work

    method._straggler_probe = True  # type: ignore[attr-defined]
    method.__name__ = name
    method.__doc__ = getattr(orig, "__doc__", None)
    return method
