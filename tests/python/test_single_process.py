"""The package in one process without torch.distributed: init, automatic steps, the optimizer,
annotations, regions, and the report at shutdown."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import harness

SCRIPT = textwrap.dedent("""
    import json, sys, torch, straggler_probe as sp
    out = sys.argv[1]
    assert sp.init(out_dir=out, warmup_steps=1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for i in range(8):
        sp.annotate(seq_lens=[16, 8])
        with sp.region("my-preprocessing"):
            x = torch.randn(16, 32)
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    before = sp.stats()
    sp.shutdown()
    print(json.dumps({"before": before, "after": sp.stats()}))
""")


def test_single_process_job(tmp_path):
    env = {"PYTHONPATH": harness.package_path() or ""}
    import os
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True,
                          text=True, env=dict(os.environ, **env), timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    before, after = result["before"], result["after"]
    assert before["step"] == 8 and before["recording"]
    assert before["runtime"]["events_recorded"] >= 8 * 4  # forward, backward, optimizer, region
    assert before["runtime"]["events_dropped"] == 0
    assert after["pipeline"]["state"] == "stopped"
    assert after["pipeline"]["steps_analyzed"] >= 6
    lines = [l for l in proc.stdout.splitlines() if l.startswith("straggler_probe step=")]
    assert len(lines) >= 6, proc.stdout
    assert (tmp_path / "report.json").exists()
    assert (tmp_path / "straggler_probe_steps.jsonl").exists()


def test_bad_values_are_one_clear_error(tmp_path):
    import os
    code = ("import straggler_probe\n"
            "try:\n    straggler_probe.init()\n"
            "except straggler_probe.ConfigError as e:\n    print('ConfigError:', e)\n")
    env = dict(os.environ, PYTHONPATH=harness.package_path() or "")
    for name, value in (("STRAGGLER_PROBE_MAX_LAG", "lots"),        # the package's own setting
                        ("STRAGGLER_PROBE_RING_CAPACITY", "abc")):  # the runtime's
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=dict(env, **{name: value}), timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("ConfigError:") and name in proc.stdout, proc.stdout


def test_preloaded_runtime_is_the_one_used(tmp_path):
    # under LD_PRELOAD=libstraggler_probe.so (GPU capture) the Python hooks and the transport must
    # talk to that instance, not to the copy linked into _core, or steps would be split in two
    import os
    from pathlib import Path

    import pytest
    pkg = harness.package_path()
    lib = Path(pkg).parent / "runtime" / "libstraggler_probe.so" if pkg else None
    if lib is None or not lib.exists():
        pytest.skip("libstraggler_probe.so is not built next to the package")
    code = "from straggler_probe import _native\n" + SCRIPT
    code = code.replace("print(json.dumps({", "print(json.dumps({'source': _native.core.runtime_source(), ")
    env = dict(os.environ, PYTHONPATH=pkg, LD_PRELOAD=str(lib))
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["source"] == "preloaded"
    assert result["before"]["runtime"]["events_recorded"] >= 8 * 4
    assert result["after"]["pipeline"]["steps_analyzed"] >= 6
