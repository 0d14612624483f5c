"""One runtime per process: the package binds to libstraggler_probe.so by path (python/src/
runtime_table.h), so that a later dlopen of the same file (NCCL_PROFILER_PLUGIN, ctypes) reaches the
same instance; the copy linked into _core is only a fallback, with one warning."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import harness

SCRIPT = textwrap.dedent("""
    import ctypes, json, os, sys
    import straggler_probe as sp
    from straggler_probe import _native
    core = _native.core
    assert sp.init(out_dir=sys.argv[1], transport="none")
    path = core.runtime_library()
    out = {"source": core.runtime_source(), "library": path, "warning": core.runtime_warning()}
    if path:
        # what NCCL does with NCCL_PROFILER_PLUGIN=<path>: dlopen the file, RTLD_LOCAL
        already = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_NOLOAD)
        lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        lib.sp_intern.argtypes = [ctypes.c_char_p]
        lib.sp_intern.restype = ctypes.c_uint32
        lib.sp_region_begin.argtypes = [ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint32]
        lib.sp_region_begin.restype = ctypes.c_uint64
        lib.sp_region_end.argtypes = [ctypes.c_uint64]
        name = core.intern("shared-runtime-probe")
        before = core.stats()["events_recorded"]
        token = lib.sp_region_begin(_native.OTHER, -1, name)   # recorded through the dlopen'ed copy
        out.update(enabled=lib.sp_is_enabled(), same_name=lib.sp_intern(b"shared-runtime-probe") == name,
                   region_end=lib.sp_region_end(token),
                   recorded=core.stats()["events_recorded"] - before)   # ... seen through _core
        lib.sp_shutdown()
        out["enabled_after"] = bool(core.is_enabled())
        out["mapped"] = sorted({l.split()[-1] for l in open("/proc/self/maps")
                                if l.rstrip().endswith("libstraggler_probe.so")})
    sp.shutdown()
    print(json.dumps(out))
""")


def run(tmp_path: Path, **env: str) -> tuple[dict, str]:
    full = dict(os.environ, PYTHONPATH=harness.package_path() or "", **env)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True,
                          text=True, env=full, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def built_library() -> Path | None:
    pkg = harness.package_path()
    if not pkg:
        return None
    for lib in (Path(pkg) / "straggler_probe" / "libstraggler_probe.so",   # installed
                Path(pkg).parent / "runtime" / "libstraggler_probe.so"):     # build tree
        if lib.exists():
            return lib
    return None


def test_a_later_dlopen_of_the_library_reaches_the_same_runtime(tmp_path):
    if built_library() is None:
        pytest.skip("libstraggler_probe.so is not built next to the package")
    out, stderr = run(tmp_path)
    assert out["source"] == "shared" and out["warning"] == "", stderr
    assert Path(out["library"]).samefile(built_library())
    assert out["enabled"] == 1 and out["same_name"]
    assert out["region_end"] == 0 and out["recorded"] == 1
    assert out["enabled_after"] is False  # shut down through the other handle: one runtime
    assert len(out["mapped"]) == 1, out["mapped"]
    assert "could not be loaded" not in stderr


def test_explicit_library_path(tmp_path):
    lib = built_library()
    if lib is None:
        pytest.skip("libstraggler_probe.so is not built next to the package")
    out, _ = run(tmp_path, STRAGGLER_PROBE_LIB=str(lib))
    assert out["source"] == "shared" and Path(out["library"]).samefile(lib)


def test_without_the_library_the_built_in_runtime_is_one_warning(tmp_path):
    out, stderr = run(tmp_path, STRAGGLER_PROBE_LIB=str(tmp_path / "nowhere" / "libstraggler_probe.so"))
    assert out["source"] == "built-in" and out["library"] == ""
    assert "nowhere/libstraggler_probe.so: not found" in out["warning"]
    assert stderr.count("libstraggler_probe.so could not be loaded") == 1, stderr
