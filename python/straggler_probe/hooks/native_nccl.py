"""Whether NCCL's operations are seen below Python, by libstraggler_probe.so's NCCL layer.

The library records every NCCL collective and send/receive with its GPU times as NCCL's profiler
plugin (NCCL_PROFILER_PLUGIN naming it, or NCCL's static-plugin lookup when it is preloaded) or
as its `nccl*` interposer (preloaded) (nccl_hooks/README.md). The analysis then takes the NCCL
records over any CPU-timed record of the same operations (online/src/model/source_selection.h), so
Python hooks on a pure-NCCL process group would only cost: a pre-hook, a post-hook and a future
callback from NCCL's thread, each taking the GIL from the training thread, per operation (per
DDP bucket). The process-group layer leaves such groups to the library (hooks/process_group.py).
"""
from __future__ import annotations

import os
from typing import Any


def nccl_layer_in_process(core: Any) -> bool:
    """True when the runtime in use has the NCCL layer and NCCL will find it: preloaded, or
    NCCL_PROFILER_PLUGIN names the same library file."""
    try:
        source = core.runtime_source()
        library = core.runtime_library()
    except Exception:  # noqa: BLE001 - an older _core: say no, the Python hooks stay
        return False
    if source == "preloaded":
        return True
    plugin = os.environ.get("NCCL_PROFILER_PLUGIN", "")
    if source != "shared" or not plugin or not library:
        return False
    if os.path.sep in plugin:
        return os.path.realpath(plugin) == os.path.realpath(library)
    return plugin == os.path.basename(library)  # a bare name NCCL looks up on the library path


def is_pure_nccl(dist: Any, pg: Any) -> bool:
    """A group whose every operation goes to NCCL (not "cpu:gloo,cuda:nccl", whose CPU tensors
    gloo reduces, nor a group torch cannot name)."""
    try:
        return str(dist.get_backend(pg)).lower() == "nccl"
    except Exception:  # noqa: BLE001
        return False
