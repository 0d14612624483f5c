"""Issue 22: the probe leaves a DDP model's comm hook as DDP made it wherever something below DDP
sees the buckets (NCCL: the NCCL layer; gloo from torch 2.15: the ProcessGroup hooks), and the
opt-in `ddp_comm_hook=on` still times them with its hook off NCCL. A hook DDP cannot unregister
would change the job for good, also after shutdown()."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import harness

HERE = Path(__file__).resolve().parent
UNTOUCHED = {"comm_hooks": [], "register_is_torch": True}


def _run(tmp_path: Path, probe: dict) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [harness.package_path(), str(HERE)]))
    probe = dict(probe, out_dir=str(tmp_path / "out"))
    proc = subprocess.run([sys.executable, str(HERE / "ddp_hook_job.py"), json.dumps(probe)],
                          env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _pg_has_hooks() -> bool:
    import torch.distributed as dist
    pg_cls = dist.distributed_c10d.ProcessGroup
    return hasattr(pg_cls, "register_pre_hook") and hasattr(pg_cls, "register_post_hook")


@pytest.mark.parametrize("setting", [{}, {"ddp_comm_hook": "off"}])
def test_gloo_ddp_comm_hook_state_is_untouched(tmp_path, setting):
    if not setting and not _pg_has_hooks():
        pytest.skip("torch before 2.15: auto times gloo buckets with the probe's hook")
    got = _run(tmp_path, setting)
    assert got["before"] == UNTOUCHED
    assert got["after_steps"] == UNTOUCHED, "no comm hook registered, class not patched"
    assert got["after_shutdown"] == UNTOUCHED
    assert got["ddp"] == {"models": 1, "times_buckets": False, "comm_hooks_registered": 0}
    if _pg_has_hooks():
        # the buckets are still seen, below DDP: 6 steps of several buckets each, each ended by
        # a C++ callback on its future (where _c10d observes the group: no Python at all),
        # its C++ completion stamp or polled (open_works.py)
        assert got["buckets"] is None or got["buckets"] >= 2
        pg = got["process_groups"]
        ends = pg["polled_ends"] + pg["stamped_ends"] + pg["cpp_future_ends"]
        assert ends >= 6 * 2, pg
        if pg["observed_in_cpp"]:
            assert pg["cpp_future_ends"] >= 6 * 2 and pg["polled_ends"] == 0, pg


def test_opt_in_hook_times_gloo_buckets(tmp_path):
    got = _run(tmp_path, {"ddp_comm_hook": "on"})
    assert got["ddp"]["times_buckets"] and got["ddp"]["comm_hooks_registered"] == 1
    assert len(got["after_steps"]["comm_hooks"]) == 1
    assert got["after_shutdown"]["register_is_torch"], "the class is torch's again"


class _FakeDdp:
    """Stands in for DistributedDataParallel: records hook registrations."""

    def __init__(self, backend: str, device_type: str = "cuda"):
        self.process_group = types.SimpleNamespace(backend=backend)
        self.device_type = device_type
        self.registered: list = []

    def register_comm_hook(self, state, hook):  # noqa: ANN001, ANN201
        self.registered.append(hook)


def _fake_dist():
    c10d = types.SimpleNamespace(all_reduce=lambda *a, **k: None)
    return types.SimpleNamespace(distributed_c10d=c10d,
                                 get_backend=lambda pg: pg.backend)


@pytest.mark.parametrize("mode", ["auto", "on"])
@pytest.mark.parametrize("backend", ["nccl", "cpu:gloo,cuda:nccl"])
def test_never_a_comm_hook_on_nccl(mode, backend):
    from straggler_probe.hooks.ddp import DdpHooks

    rec = types.SimpleNamespace(ddp_backward_ends_at_engine=False, intern=lambda name: 1)
    coll = types.SimpleNamespace(groups=object())
    hooks = DdpHooks(rec, coll, _FakeDdp, _fake_dist(), mode, pg_layer_sees_buckets=False)
    hooks.install()
    try:
        model = _FakeDdp(backend)
        hooks.on_top_level(model)
        assert model.registered == [], "no hook of ours on an NCCL model"
        model.register_comm_hook(None, lambda state, bucket: None)  # a user's hook
        assert not getattr(model.registered[0], "_straggler_probe", False), "not wrapped"
        assert rec.ddp_backward_ends_at_engine, "the backward still ends at the engine's end"
    finally:
        hooks.uninstall()


def test_gloo_model_gets_the_hook_where_nothing_else_sees_buckets():
    from straggler_probe.hooks.ddp import DdpHooks

    rec = types.SimpleNamespace(ddp_backward_ends_at_engine=False, intern=lambda name: 1)
    coll = types.SimpleNamespace(groups=object())
    hooks = DdpHooks(rec, coll, _FakeDdp, _fake_dist(), "auto", pg_layer_sees_buckets=False)
    hooks.install()
    try:
        model = _FakeDdp("gloo", "cpu")
        hooks.on_top_level(model)
        assert len(model.registered) == 1 and model.registered[0]._straggler_probe
    finally:
        hooks.uninstall()
    assert _FakeDdp.register_comm_hook.__qualname__ == "_FakeDdp.register_comm_hook"


def test_nccl_layer_in_process(monkeypatch, tmp_path):
    from straggler_probe.hooks.native_nccl import nccl_layer_in_process

    lib = tmp_path / "libstraggler_probe.so"
    lib.write_bytes(b"")

    def core(source: str, library: str = str(lib)):
        return types.SimpleNamespace(runtime_source=lambda: source, runtime_library=lambda: library)

    monkeypatch.delenv("NCCL_PROFILER_PLUGIN", raising=False)
    assert nccl_layer_in_process(core("preloaded"))
    assert not nccl_layer_in_process(core("shared")), "loaded by path, NCCL not told"
    assert not nccl_layer_in_process(core("built-in", ""))
    monkeypatch.setenv("NCCL_PROFILER_PLUGIN", str(lib))
    assert nccl_layer_in_process(core("shared"))
    monkeypatch.setenv("NCCL_PROFILER_PLUGIN", "libstraggler_probe.so")
    assert nccl_layer_in_process(core("shared"))
    monkeypatch.setenv("NCCL_PROFILER_PLUGIN", "/elsewhere/libother.so")
    assert not nccl_layer_in_process(core("shared"))


def test_pure_nccl_groups_get_no_process_group_hooks():
    from straggler_probe.hooks.process_group import ProcessGroupHooks

    class Group:
        def __init__(self, backend: str):
            self.backend, self.hooks, self.seq = backend, [], 0

        def register_pre_hook(self, hook_id, fn):  # noqa: ANN001, ANN201
            self.hooks.append(hook_id)

        register_post_hook = register_pre_hook

        def _get_sequence_number_for_group(self) -> int:
            return self.seq

    nccl, gloo = Group("nccl"), Group("gloo")
    c10d = types.SimpleNamespace(ProcessGroup=type("PG", (), {"register_pre_hook": 1,
                                                              "register_post_hook": 1}),
                                 _world=types.SimpleNamespace(pg_map={nccl: 0, gloo: 0}))
    dist = types.SimpleNamespace(distributed_c10d=c10d, get_backend=lambda pg: pg.backend)
    coll = types.SimpleNamespace(groups=None, tls=None, rank=0)
    rec = types.SimpleNamespace(failed=False, step=0)
    hooks = ProcessGroupHooks(rec, dist, coll, leave_nccl=True)
    hooks.mode = "hooks"  # what install() picks on a torch with the hooks (it also patches Work)
    hooks.find_groups()
    assert nccl.hooks == [] and len(gloo.hooks) == 2
    nccl.seq = 14  # a step's buckets, seen by the NCCL layer
    assert hooks.native_ops() == 14 and hooks.stats()["left_to_nccl"] == 1
