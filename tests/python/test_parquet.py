"""Parquet traces through the CLI give the same analysis as the CSV they came from.

Needs pyarrow (in requirements.txt) and the built CLI: STRAGGLER_PROBE_CLI names the binary
(CTest's cli_parquet sets it), else `straggler-probe` on PATH.
"""

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install -r requirements.txt)")
import numpy as np  # noqa: E402  (pyarrow requires it)
import pyarrow.csv as pa_csv  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
sys.path.insert(0, str(REPO / "python" / "straggler_probe"))
import trace_io  # noqa: E402  (the module itself, without importing the package)


def cli_binary():
    path = os.environ.get("STRAGGLER_PROBE_CLI") or shutil.which("straggler-probe")
    if not path:
        pytest.skip("the straggler-probe binary is not built (set STRAGGLER_PROBE_CLI)")
    return path


def write_parquet(csv_gz: Path, out: Path, extra_column=False):
    """The reference CSV as the artifact stores it: float32 times, int64 ids, string op types."""
    table = pa_csv.read_csv(
        csv_gz, convert_options=pa_csv.ConvertOptions(column_types={"start_ts": pa.float32(), "duration": pa.float32()}))
    if extra_column:
        table = table.append_column("tp_rank", pa.array([0] * table.num_rows, pa.int32()))
    pq.write_table(table, out)


def run_cli(args):
    return subprocess.run([cli_binary(), *args], capture_output=True, text=True)


def read_results(out: Path):
    return {name: json.loads((out / name).read_text()) for name in ("result.json", "ms.json", "mw.json")}


def test_conversion_is_exact(tmp_path):
    src = DATA / "ST" / "trace.csv.gz"
    write_parquet(src, tmp_path / "t.parquet")
    trace_io.parquet_to_csv(str(tmp_path / "t.parquet"), str(tmp_path / "t.csv"))
    with gzip.open(src, "rt") as f:
        want = f.read().splitlines()
    got = (tmp_path / "t.csv").read_text().splitlines()
    assert got[0] == want[0]
    assert len(got) == len(want)
    for a, b in zip(got[1:], want[1:]):
        fa, fb = a.split(","), b.split(",")
        assert fa[:5] + fa[7:] == fb[:5] + fb[7:]
        assert float(fa[5]) == float(fb[5]) and float(fa[6]) == float(fb[6])  # bit-exact times


def test_nulls_in_optional_ids_become_minus_one(tmp_path):
    cols = {name: pa.array([3, 4], pa.int64()) for name in trace_io.SCHEMA}
    cols["optype"] = pa.array(["gc", "forward-compute"]).dictionary_encode()  # categorical, as pandas writes it
    cols["start_ts"] = pa.array([0.5, 0.1], pa.float32())
    cols["duration"] = pa.array([0.25, 0.1], pa.float32())
    cols["mc"] = pa.array([None, 1], pa.int64())
    cols["mb_id"] = pa.array([None, 2.0], pa.float64())  # pandas stores nullable ints as float
    cols["__index_level_0__"] = pa.array([0, 1])
    pq.write_table(pa.table(cols), tmp_path / "t.parquet")
    assert trace_io.parquet_to_csv(str(tmp_path / "t.parquet"), str(tmp_path / "t.csv")) == 2
    lines = (tmp_path / "t.csv").read_text().splitlines()
    assert lines[1] == "3,3,3,3,gc,0.5,0.25,3,-1,-1,3"
    assert lines[2] == "4,4,4,4,forward-compute,%.17g,%.17g,4,1,2,4" % (np.float32(0.1), np.float32(0.1))


def test_parquet_and_csv_give_the_same_analysis(tmp_path):
    write_parquet(DATA / "ST" / "trace.csv.gz", tmp_path / "trace.parquet")
    meta = str(DATA / "ST" / "meta.yaml")
    r_csv = run_cli(["analyze", "--trace", str(DATA / "ST" / "trace.csv.gz"), "--meta", meta, "--out", str(tmp_path / "csv")])
    assert r_csv.returncode == 0, r_csv.stderr
    r_pq = run_cli(["analyze", "--trace", str(tmp_path / "trace.parquet"), "--meta", meta, "--out", str(tmp_path / "pq")])
    assert r_pq.returncode == 0, r_pq.stderr
    assert read_results(tmp_path / "pq") == read_results(tmp_path / "csv")
    assert r_pq.stdout.replace(str(tmp_path / "pq"), "OUT") == r_csv.stdout.replace(str(tmp_path / "csv"), "OUT")


def test_extra_parquet_columns_are_ignored_with_a_warning(tmp_path):
    write_parquet(DATA / "ST" / "trace.csv.gz", tmp_path / "trace.parquet", extra_column=True)
    r = run_cli(["analyze", "--trace", str(tmp_path / "trace.parquet"), "--meta", str(DATA / "ST" / "meta.yaml"),
                 "--out", str(tmp_path / "out")])
    assert r.returncode == 0, r.stderr
    assert "straggler-probe: warning:" in r.stderr and "ignoring columns outside the trace schema: tp_rank" in r.stderr


def test_bad_parquet_values_are_bad_input(tmp_path):
    cols = {name: pa.array([0, 0], pa.int64()) for name in trace_io.SCHEMA}
    cols["optype"] = pa.array(["forward-compute", "forward-compute"])
    cols["start_ts"] = pa.array([0.0, 1.0], pa.float32())
    cols["duration"] = pa.array([0.5, -0.5], pa.float32())
    cols["seq_id"] = pa.array([0, 1], pa.int64())
    pq.write_table(pa.table(cols), tmp_path / "bad.parquet")
    meta = tmp_path / "meta.yaml"
    meta.write_text("trial_name: bad\ndp_size: 1\ndsp_size: 1\npp_size: 1\ntp_size: 1\nvpp_size: 1\nworld_size: 1\n")
    r = run_cli(["analyze", "--trace", str(tmp_path / "bad.parquet"), "--meta", str(meta), "--out", str(tmp_path / "o")])
    assert r.returncode == 2
    # Line 3 of the converted CSV is Parquet row 1.
    assert r.stderr == f"straggler-probe: error: {tmp_path / 'bad.parquet'} (as CSV):3: column 'duration': negative duration -0.5\n"

    cols["step"] = pa.array([0, None], pa.int64())
    pq.write_table(pa.table(cols), tmp_path / "null.parquet")
    r = run_cli(["analyze", "--trace", str(tmp_path / "null.parquet"), "--meta", str(meta), "--out", str(tmp_path / "o")])
    assert r.returncode == 2
    assert r.stderr == f"straggler-probe: error: {tmp_path / 'null.parquet'}: row 1: column 'step': null value\n"


def test_missing_pyarrow_is_reported(tmp_path):
    write_parquet(DATA / "ST" / "trace.csv.gz", tmp_path / "trace.parquet")
    # An interpreter that cannot import pyarrow: Python with site-packages disabled.
    fake = tmp_path / "python-without-pyarrow"
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} -S -I \"$@\"\n")
    fake.chmod(0o755)
    env = dict(os.environ, STRAGGLER_PROBE_PYTHON=str(fake))
    r = subprocess.run([cli_binary(), "analyze", "--trace", str(tmp_path / "trace.parquet"), "--meta",
                        str(DATA / "ST" / "meta.yaml"), "--out", str(tmp_path / "o")], capture_output=True, text=True, env=env)
    assert r.returncode == 1
    assert "reading Parquet needs pyarrow" in r.stderr
    assert r.stderr.count("\n") == 1
