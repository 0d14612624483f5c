"""Single-process checks of the package's pieces: configuration, sequence lengths, topology."""
from __future__ import annotations

import pytest
import torch

from straggler_probe._config import ConfigError, former_names_used, load_config, unknown_env
from straggler_probe._topology import infer_dp_pp
from straggler_probe.hooks import seqlens


def test_defaults_and_env_and_kwargs():
    cfg = load_config({}, environ={})
    assert cfg.steps == "auto" and cfg.max_lag == 8 and cfg.gc
    cfg = load_config({}, environ={"STRAGGLER_PROBE_MAX_LAG": "3", "STRAGGLER_PROBE_GC": "off"})
    assert cfg.max_lag == 3 and not cfg.gc
    cfg = load_config({"max_lag": 5}, environ={"STRAGGLER_PROBE_MAX_LAG": "3"})
    assert cfg.max_lag == 5  # keywords win


@pytest.mark.parametrize("name,value", [("STRAGGLER_PROBE_MAX_LAG", "zero"),
                                        ("STRAGGLER_PROBE_MAX_LAG", "0"),
                                        ("STRAGGLER_PROBE_GC", "maybe"),
                                        ("STRAGGLER_PROBE_TRANSPORT", "mpi"),
                                        ("STRAGGLER_PROBE_ANALYSIS_TIMEOUT", "nan"),
                                        ("STRAGGLER_PROBE_SIGNIFICANCE", "0"),
                                        ("STRAGGLER_PROBE_SIGNIFICANCE", "1.5"),
                                        ("STRAGGLER_PROBE_ALARM_SIGNIFICANCE", "nan")])
def test_bad_env_value_is_one_clear_error(name, value):
    with pytest.raises(ConfigError) as err:
        load_config({}, environ={name: value})
    assert name in str(err.value) and repr(value) in str(err.value)


def test_bad_keyword():
    with pytest.raises(ConfigError, match="unknown keyword"):
        load_config({"max_lags": 3}, environ={})
    with pytest.raises(ConfigError, match=r"init\(steps='sometimes'\)"):
        load_config({"steps": "sometimes"}, environ={})


def test_the_recap_interval_is_still_read_under_its_former_name_with_a_warning():
    old_env = {"STRAGGLER_PROBE_SUMMARY_INTERVAL": "7"}
    assert load_config({}, environ=old_env).recap_interval == 7
    assert load_config({"summary_interval": 9}, environ={}).recap_interval == 9
    assert unknown_env(old_env) == []  # a name still read is not "misspelt"
    [warning] = former_names_used({}, old_env)
    assert warning.startswith("STRAGGLER_PROBE_SUMMARY_INTERVAL is now recap_interval= / "
                              "STRAGGLER_PROBE_RECAP_INTERVAL") and "until the next release" in warning
    # Both names given: the new one wins, and the warning says the old one was ignored.
    both = {"STRAGGLER_PROBE_SUMMARY_INTERVAL": "7", "STRAGGLER_PROBE_RECAP_INTERVAL": "3"}
    assert load_config({}, environ=both).recap_interval == 3
    [warning] = former_names_used({}, both)
    assert "ignored, since recap_interval is given too" in warning
    assert former_names_used({"recap_interval": 4}, {}) == []
    # The former name goes through the same check, and the error names what was written.
    with pytest.raises(ConfigError, match="STRAGGLER_PROBE_SUMMARY_INTERVAL='-1'"):
        load_config({}, environ={"STRAGGLER_PROBE_SUMMARY_INTERVAL": "-1"})


def test_misspelt_env_is_reported():
    assert unknown_env({"STRAGGLER_PROBE_MAXLAG": "3", "STRAGGLER_PROBE_GC": "1"}) == \
        ["STRAGGLER_PROBE_MAXLAG"]


def test_seq_lens_from_cu_seqlens_and_mask():
    assert seqlens.from_mapping({"cu_seqlens": torch.tensor([0, 5, 12, 12, 20])}) == [5, 7, 8]
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    assert seqlens.from_call((), {"attention_mask": mask}) == [3, 2]
    assert seqlens.from_call(({"attention_mask": mask},), {}) == [3, 2]
    additive = torch.tensor([[0.0, -1e9], [0.0, 0.0]])  # float: not a 0/1 mask, not read
    assert seqlens.from_mapping({"attention_mask": additive}) is None
    assert seqlens.from_mapping({"input_ids": torch.zeros(2, 3)}) is None


def test_topology_inference():
    # stage-major: stages hold [0,1], [2,3]
    assert infer_dp_pp([2, 3], 3, 4) == (1, 1)
    # dp-major: stage s holds s, s+2
    assert infer_dp_pp([1, 3], 3, 4) == (1, 1)
    assert infer_dp_pp([0, 1, 2, 3], 2, 4) == (2, 0)
    assert infer_dp_pp([0, 3], 3, 4) is None  # not a layout we can read: unknown, not guessed


def test_settings_table_reaches_docs_and_cpp():
    # docs/CONFIG.md's table and setting_defaults.h are generated from the table: fresh?
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    check = subprocess.run([sys.executable, str(root / "scripts" / "gen_settings.py"), "--check"],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_pipeline_settings_defaults_are_the_tables():
    # _core.PipelineSettings's defaults come from setting_defaults.h as compiled: the same values
    # as Config's (the table's), for every setting the struct carries.
    from straggler_probe import _native
    from straggler_probe._config import SETTINGS_BY_NAME, Config

    core = _native.core
    assert core is not None, _native.IMPORT_ERROR
    defaults, cfg = core.PipelineSettings(), Config()
    names = core.PipelineSettings.SETTING_NAMES
    assert set(names) <= set(SETTINGS_BY_NAME), set(names) - set(SETTINGS_BY_NAME)
    for name in names:
        table = getattr(cfg, name)
        if name == "out_dir":  # "" in C++: no files unless the package names the directory
            continue
        expected = SETTINGS_BY_NAME[name].cpp_unset if table is None else table
        assert getattr(defaults, name) == expected, name


def test_bad_transport_protocol_is_one_clear_error():
    with pytest.raises(ConfigError, match="STRAGGLER_PROBE_TRANSPORT_PROTOCOL='hosts'"):
        load_config({}, environ={"STRAGGLER_PROBE_TRANSPORT_PROTOCOL": "hosts"})
    with pytest.raises(ConfigError, match="unknown keyword"):  # environment only
        load_config({"transport_protocol": "rank"}, environ={})


class _FakeEvent:
    """A CUDA event stand-in: 'records' the CPU time; the GPU is always done."""

    def __init__(self, enable_timing: bool = False):
        self.t = None

    def record(self) -> None:
        import time
        self.t = time.time_ns()

    def query(self) -> bool:
        return self.t is not None

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, other: "_FakeEvent") -> float:
        return (other.t - self.t) / 1e6


class _FakeTorch:
    class cuda:  # noqa: N801
        Event = _FakeEvent


def test_cuda_event_timer_resolves_off_thread_and_pins_the_step():
    import time

    from straggler_probe import _native as N
    from straggler_probe._timing import CudaEventTimer

    recorded = []
    timer = CudaEventTimer(lambda *a: recorded.append(a), _FakeTorch)
    start = timer.stamp()
    time.sleep(0.01)
    end = timer.stamp()
    timer.submit(N.FORWARD, start, end, 3, 0, N.STREAM_MAIN, 7)
    deadline = time.time() + 2
    while not recorded and time.time() < deadline:
        time.sleep(0.01)
    timer.close()
    assert len(recorded) == 1
    kind, t0, t1, mb, _name, stream, *_rest, source, step_plus_one = recorded[0]
    assert (kind, mb, stream, source, step_plus_one) == (N.FORWARD, 3, N.STREAM_MAIN,
                                                         N.TIME_CUDA_EVENT, 8)
    assert 9e6 <= t1 - t0 <= 50e6  # ~10 ms, on the CPU clock's axis
    assert abs(t0 - start.t) < 2e6


def test_scalars_read_the_old_name_of_cpu_delay():
    # A verdict file written before "host" meant the machine only names the cause "host-delay";
    # a logger reading an older run still gets the cause's code (one release of overlap).
    from straggler_probe._verdicts import CAUSE_CODES, scalars
    old = scalars({"analyzed": True, "cause": "host-delay", "S": 1.3, "worst_S": 1.2, "worst": "rank:2"})
    new = scalars({"analyzed": True, "cause": "cpu-delay", "S": 1.3, "worst_S": 1.2, "worst": "rank:2"})
    assert old == new and new["straggler/cause"] == CAUSE_CODES["cpu-delay"] == 6
