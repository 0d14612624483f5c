"""straggler_probe autoload.

libstraggler_probe.so, preloaded into a Python process (LD_PRELOAD; no RANK needed: Lightning's
launcher sets only LOCAL_RANK in its children, nothing in its first process), puts this
directory first on PYTHONPATH. An unmodified training script then gets the
straggler_probe package: it starts when the script initialises torch.distributed, as if the script
had called straggler_probe.init() itself. Processes that never initialise torch.distributed
(spawned data-loader workers, tools) are left untouched apart from one import hook. Any failure is
one warning and the script runs on. The interpreter's own sitecustomize, if any, still runs.
torch.profiler sessions get CUPTI to themselves: the probe's GPU capture pauses for each one and
resumes after it (sp_cupti_pause / sp_cupti_resume).

Opt out with STRAGGLER_PROBE_PYTHON_AUTOLOAD=0. A script that calls straggler_probe.init() with
arguments should do so before init_process_group (init() is idempotent: the first call wins).
"""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_started = False


def _warn(message):
    sys.stderr.write("[straggler_probe] warning: " + message + "\n")


def _start_probe():
    global _started
    if _started:
        return
    _started = True
    try:
        import straggler_probe
        straggler_probe.init()
    except Exception as err:  # the job must go on
        _warn("the straggler_probe package did not start under LD_PRELOAD (%s: %s); the job runs "
              "without per-step lines" % (type(err).__name__, err))


def _patch(module):
    original = getattr(module, "init_process_group", None)
    if original is None or getattr(original, "_straggler_probe_autoload", False):
        return
    import functools

    @functools.wraps(original)
    def init_process_group(*args, **kwargs):
        _start_probe()
        return original(*args, **kwargs)

    init_process_group._straggler_probe_autoload = True
    module.init_process_group = init_process_group


def _patch_profiler(module):
    """torch.profiler takes CUPTI over: hand it over around each session (sp_cupti_pause/resume)."""
    profile = getattr(module, "profile", None)
    if profile is None or getattr(profile.start, "_straggler_probe_autoload", False):
        return
    import ctypes
    import functools
    lib = ctypes.CDLL(os.path.join(os.path.dirname(_HERE), "libstraggler_probe.so"))
    lib.sp_cupti_pause.argtypes = [ctypes.c_char_p]
    start, stop = profile.start, profile.stop

    @functools.wraps(start)
    def start_wrapper(self, *args, **kwargs):
        lib.sp_cupti_pause(b"torch.profiler")
        return start(self, *args, **kwargs)

    @functools.wraps(stop)
    def stop_wrapper(self, *args, **kwargs):
        try:
            return stop(self, *args, **kwargs)
        finally:
            lib.sp_cupti_resume()

    start_wrapper._straggler_probe_autoload = True
    profile.start, profile.stop = start_wrapper, stop_wrapper


_PATCHES = {"torch.distributed": _patch, "torch.profiler": _patch_profiler}


class _TorchFinder:
    """Patches torch.distributed (init_process_group) and torch.profiler (profile.start/stop)
    right after each is imported."""

    def __init__(self):
        self.pending = set(_PATCHES)

    def find_spec(self, name, path, target=None):
        if name not in self.pending:
            return None
        import importlib.machinery
        self.pending.discard(name)
        if not self.pending and self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        patch = _PATCHES[name]

        def exec_module(module):
            run(module)
            try:
                patch(module)
            except Exception as err:
                _warn("autoload could not hook %s (%s)" % (name, err))

        spec.loader.exec_module = exec_module
        return spec


def _chain_site_customize():
    """Runs the sitecustomize this one shadows (the interpreter's or the environment's)."""
    import importlib.machinery
    import importlib.util
    rest = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _install():
    env = os.environ
    if env.get("STRAGGLER_PROBE_PYTHON_AUTOLOAD", "1") == "0":
        return
    finder = _TorchFinder()
    for name, patch in _PATCHES.items():
        if name in sys.modules:
            finder.pending.discard(name)
            patch(sys.modules[name])
    if finder.pending:
        sys.meta_path.insert(0, finder)


try:
    _install()
finally:
    _chain_site_customize()
