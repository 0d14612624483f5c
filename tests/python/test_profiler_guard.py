"""torch.profiler coexistence: the probe hands CUPTI over for each profiling session and takes it
back after (python/straggler_probe/_profiler_guard.py). The accounting against a stand-in of
torch.autograd.profiler's three entry points, then real torch.profiler sessions in a probed job
(on CPU the GPU capture is off: the hand-overs are counted, the runtime says 'disabled')."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types

import pytest

import harness

pytest.importorskip("torch")
from straggler_probe import _profiler_guard  # noqa: E402
from straggler_probe._profiler_guard import ProfilerGuard  # noqa: E402


class FakeRuntime:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def pause(self, reason: str) -> int:
        self.calls.append("pause")
        return 0

    def resume(self) -> int:
        self.calls.append("resume")
        return 0


def fake_profiler_module(calls: list[str], fail: str = "") -> types.SimpleNamespace:
    def entry(name: str):
        def f(*args, **kwargs):
            calls.append(name)
            if name == fail:
                raise RuntimeError(f"{name} failed")
            return name
        return f
    return types.SimpleNamespace(_prepare_profiler=entry("prepare"),
                                 _enable_profiler=entry("enable"),
                                 _disable_profiler=entry("disable"))


def guarded(fail: str = ""):
    rt = FakeRuntime()
    mod = fake_profiler_module(rt.calls, fail)
    guard = ProfilerGuard(rt.pause, rt.resume)
    assert guard.install(mod)
    return rt, mod, guard


def test_pause_before_prepare_resume_after_disable():
    rt, mod, guard = guarded()
    mod._prepare_profiler(1, 2, activity_filter=None)
    mod._enable_profiler(1, 2)
    assert mod._disable_profiler() == "disable"
    assert rt.calls == ["pause", "prepare", "enable", "disable", "resume"]
    assert guard.stats() == {"installed": True, "open_sessions": 0, "handovers": 1,
                             "takebacks": 1, "capture_paused": 1, "capture_resumed": 1}


def test_enable_without_prepare_is_a_session_too():  # emit_nvtx / emit_itt
    rt, mod, guard = guarded()
    mod._enable_profiler()
    mod._disable_profiler()
    assert rt.calls == ["pause", "enable", "disable", "resume"]


def test_nested_sessions_hand_over_once():
    rt, mod, guard = guarded()
    mod._prepare_profiler()
    mod._enable_profiler()
    mod._enable_profiler()   # a second profiler inside the first
    mod._disable_profiler()
    assert "resume" not in rt.calls and guard.stats()["open_sessions"] == 1
    mod._disable_profiler()
    assert rt.calls.count("pause") == 1 and rt.calls[-1] == "resume"
    assert guard.stats()["takebacks"] == 1


def test_resume_even_when_disable_raises():
    rt, mod, guard = guarded(fail="disable")
    mod._prepare_profiler()
    mod._enable_profiler()
    with pytest.raises(RuntimeError):
        mod._disable_profiler()
    assert rt.calls[-1] == "resume" and guard.stats()["open_sessions"] == 0


@pytest.mark.parametrize("fail", ["prepare", "enable"])
def test_a_session_that_fails_to_start_gives_cupti_back(fail):
    rt, mod, guard = guarded(fail=fail)
    with pytest.raises(RuntimeError):
        mod._prepare_profiler()
        mod._enable_profiler()
    assert rt.calls[0] == "pause" and rt.calls[-1] == "resume"
    assert guard.stats()["open_sessions"] == 0


def test_install_is_idempotent_and_uninstall_restores():
    rt = FakeRuntime()
    mod = fake_profiler_module(rt.calls)
    originals = dict(vars(mod))
    guard = ProfilerGuard(rt.pause, rt.resume)
    assert guard.install(mod) and guard.install(mod)
    mod._enable_profiler()
    mod._disable_profiler()
    assert rt.calls == ["pause", "enable", "disable", "resume"]  # wrapped once, not twice
    guard.uninstall()
    assert vars(mod) == originals
    guard.uninstall()


def test_uninstall_during_a_session_waits_for_its_end():
    rt, mod, guard = guarded()
    mod._prepare_profiler()
    guard.uninstall()  # e.g. the probe shuts down while a profiler runs
    assert guard.installed
    mod._enable_profiler()
    mod._disable_profiler()
    assert rt.calls[-1] == "resume" and not guard.installed
    assert getattr(mod._disable_profiler, "_straggler_probe_profiler_guard", None) is None


def test_a_torch_without_the_entry_points_is_one_warning(monkeypatch):
    import torch.autograd.profiler as real
    monkeypatch.delattr(real, "_prepare_profiler")
    monkeypatch.setattr(_profiler_guard, "_warned_missing", False)
    core = types.SimpleNamespace(cupti_pause=lambda r: 0, cupti_resume=lambda: 0)
    with pytest.warns(RuntimeWarning, match="_prepare_profiler"):
        undo = _profiler_guard.install(core)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _profiler_guard.install(core)  # no second warning
    undo()
    assert not hasattr(real._enable_profiler, "_straggler_probe_profiler_guard")


JOB = textwrap.dedent("""
    import json, sys, torch, straggler_probe as sp
    from straggler_probe import _native
    assert sp.init(out_dir=sys.argv[1], warmup_steps=1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    def train(n):
        for _ in range(n):
            loss = model(torch.randn(16, 32)).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
    train(4)
    before = sp.stats()["profiler_guard"]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        train(3)
    during = [e.key for e in prof.key_averages()]
    nested_error = None
    with torch.autograd.profiler.profile():
        try:
            with torch.autograd.profiler.profile():  # torch refuses a second one
                pass
        except RuntimeError as err:
            nested_error = str(err)
        train(1)
    after = sp.stats()
    train(4)
    cupti = _native.core.cupti_stats()
    sp.shutdown()
    print(json.dumps({"before": before, "profiled_ops": during, "nested_error": nested_error,
                      "after": after["profiler_guard"], "step": after["step"], "cupti": cupti}))
""")


def test_torch_profiler_sessions_in_a_probed_job(tmp_path):
    env = dict(os.environ, PYTHONPATH=harness.package_path() or "")
    proc = subprocess.run([sys.executable, "-c", JOB, str(tmp_path)], capture_output=True,
                          text=True, env=env, timeout=180)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["before"]["installed"] and result["before"]["handovers"] == 0
    # the profiler worked under the guard
    assert any("linear" in k or "addmm" in k for k in result["profiled_ops"]), result["profiled_ops"]
    after = result["after"]
    # two sessions (the nested attempt inside the second one does not count twice)
    assert after["handovers"] == 2 and after["takebacks"] == 2 and after["open_sessions"] == 0
    cupti = result["cupti"]
    if cupti is None or not (cupti["active"] or cupti["paused"]):
        # no GPU capture here: the runtime was asked and said "disabled"; nothing was paused
        assert after["capture_paused"] == 0 and after["capture_resumed"] == 0
    else:
        assert after["capture_paused"] == after["capture_resumed"] == cupti["pauses"] == 2
        assert not cupti["paused"]
    # the probe kept finding steps and producing its lines through and after the profiled ones
    # (steps 4-6 under torch.profiler, 7 under the autograd profiler; 12 steps in all)
    assert result["step"] == 8
    lines = [l for l in proc.stdout.splitlines() if l.startswith("straggler_probe step=")]
    steps = {int(l.split()[1].split("=")[1]) for l in lines}
    assert set(range(3, 12)) <= steps, proc.stdout


def test_installed_while_a_profiler_runs_it_hands_over_at_once(monkeypatch):
    monkeypatch.setattr(_profiler_guard, "_profiler_running", lambda: True)
    rt = FakeRuntime()
    mod = fake_profiler_module(rt.calls)
    guard = ProfilerGuard(rt.pause, rt.resume)
    assert guard.install(mod)
    assert rt.calls == ["pause"] and guard.stats()["open_sessions"] == 1
    mod._disable_profiler()  # that profiler's end
    assert rt.calls == ["pause", "disable", "resume"]
