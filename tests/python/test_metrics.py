"""Rank 0's metrics server (rank_pipeline/src/http/) on the demo's live job (examples/gpt_demo.py:
4 ranks over gloo, rank 2 30% slower, each rank on a host of its own name): a real Prometheus
server (Debian's `prometheus`) scrapes it and its query API returns the S series, the steps by
cause and the GPU-seconds lost with the slow rank's host on top; POST /control is refused without
the token and obeyed with it at the next step boundary; 200 malformed requests each get a 4xx and
the job goes on; the textfile for node_exporter is written whole.

One job serves every test of this module (started once, ended at the module's end): the tests
run in file order, the pause last but one, the fuzzing last.
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

import harness

DEMO = harness.REPO / "examples" / "gpt_demo.py"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
TOKEN = "s3cret-token-for-the-test"
RUN_ID = "metrics-test"
WORLD = 4
SLOW_RANK = 2


class Demo:
    def __init__(self, out: Path, port: int, procs: list[subprocess.Popen]):
        self.out, self.port, self.procs = out, port, procs

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict | None = None) -> tuple[int, str]:
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=body,
                                     method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def status(self) -> dict:
        code, body = self.request("GET", "/status")
        assert code == 200, body
        return json.loads(body)

    def control(self, action: dict, token: str | None = TOKEN) -> tuple[int, dict]:
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        code, body = self.request("POST", "/control", json.dumps(action).encode(), headers)
        return code, json.loads(body)

    def log(self) -> str:
        return (self.out / "rank0.out").read_text()

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.procs)

    def explain(self) -> str:
        return "\n".join(f"--- rank {r}:\n" + (self.out / f"rank{r}.err").read_text()[-3000:]
                         for r in range(WORLD)) + "\n--- rank 0 out:\n" + self.log()[-3000:]


def wait_for(what: str, check, timeout: float, demo: Demo | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out after {timeout}s waiting for {what}" +
                (("\n" + demo.explain()) if demo else ""))


def start_demo(out: Path) -> Demo:
    out.mkdir(parents=True, exist_ok=True)
    port, master = harness.free_port(), harness.free_port()
    path = [harness.package_path()] if harness.package_path() else []
    base = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(master),
                WORLD_SIZE=str(WORLD), OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1",
                PYTHONPATH=os.pathsep.join(path + [os.environ.get("PYTHONPATH", "")]),
                STRAGGLER_PROBE_METRICS_PORT=str(port), STRAGGLER_PROBE_CONTROL_TOKEN=TOKEN,
                STRAGGLER_PROBE_METRICS_FILE=str(out / "straggler_probe.prom"),
                TORCHELASTIC_RUN_ID=RUN_ID)
    procs = []
    for rank in range(WORLD):
        env = dict(base, RANK=str(rank), LOCAL_RANK=str(rank),
                   STRAGGLER_PROBE_HOSTNAME=f"node-{rank}")
        procs.append(subprocess.Popen(
            [sys.executable, str(DEMO), "--steps", "100000", "--slow-rank", str(SLOW_RANK),
             "--out", str(out / "report")],
            env=env, cwd=str(out), stdout=open(out / f"rank{rank}.out", "w"),
            stderr=open(out / f"rank{rank}.err", "w")))
    return Demo(out, port, procs)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    d = start_demo(tmp_path_factory.mktemp("metrics"))
    try:
        def ready():
            assert d.alive(), d.explain()
            try:
                return d.status()["steps_analyzed"] >= 8
            except (OSError, AssertionError):
                return False
        wait_for("rank 0's server and 8 analysed steps", ready, 180, d)
        yield d
    finally:
        for p in d.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in d.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def prometheus_query(port: int, query: str) -> list:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            answer = json.loads(r.read())
    except OSError:
        return []
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


@pytest.mark.skipif(not Path(PROMETHEUS).exists(), reason="Debian's prometheus is not installed (scripts/setup.sh)")
def test_a_real_prometheus_scrapes_rank_0(demo: Demo, tmp_path: Path):
    port = harness.free_port()
    config = tmp_path / "prometheus.yml"
    # honor_labels: the probe's own `job` label (the launcher's run id) is kept as it is.
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n  - job_name: straggler_probe\n    honor_labels: true\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{demo.port}']\n")
    log = open(tmp_path / "prometheus.log", "w")
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={config}",
                             f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        # The S series: several scrapes of the last step's S, each a real slowdown.
        series = wait_for("5 scraped samples of S", lambda: [
            s for s in prometheus_query(port, "straggler_probe_step_slowdown[1m]")
            if len(s["values"]) >= 5], 120)
        assert series[0]["metric"]["job"] == RUN_ID
        assert all(float(v) >= 0.5 for _, v in series[0]["values"])
        steps = {s["metric"]["cause"]: float(s["value"][1])
                 for s in prometheus_query(port, "straggler_probe_steps_total")}
        assert steps.get("worker", 0) >= 1, steps
        ideal = prometheus_query(port, "straggler_probe_step_ideal_seconds")
        assert ideal and float(ideal[0]["value"][1]) > 0
        lost = prometheus_query(port, "sort_desc(straggler_probe_host_lost_gpu_seconds_total)")
        assert lost and lost[0]["metric"]["host"] == f"node-{SLOW_RANK}", lost
        assert float(lost[0]["value"][1]) > 0
        by_cause = prometheus_query(port, "topk(1, straggler_probe_lost_gpu_seconds_total)")
        assert by_cause[0]["metric"]["cause"] == "worker", by_cause
        up = prometheus_query(port, 'up{job="straggler_probe"}')  # the scrape's own job
        assert up and up[0]["value"][1] == "1", up
    finally:
        prom.terminate()
        prom.wait(timeout=20)
    assert demo.alive(), demo.explain()


def test_status_has_the_ledger_alarms_and_hosts_to_drain(demo: Demo):
    s = wait_for("an open worker alarm", lambda: (st := demo.status())["open_alarms"] and st, 60, demo)
    assert s["job"] == RUN_ID and s["last_verdicts"] and s["health"]["state"] == "running"
    assert s["ledger"]["top_ranks"][0]["rank"] == SLOW_RANK
    assert s["exclude_hosts"] == [f"node-{SLOW_RANK}"]
    assert s["config"]["metrics_port"] == demo.port and s["config"]["control"] == "on"
    assert TOKEN not in json.dumps(s)


def test_the_textfile_is_written_whole(demo: Demo):
    text = (demo.out / "straggler_probe.prom").read_text()
    assert "straggler_probe_step_slowdown" in text and text.endswith("\n")
    assert not [p for p in demo.out.iterdir() if ".prom.tmp" in p.name]


def test_control_without_the_token_changes_nothing_and_says_why(demo: Demo):
    before = demo.status()
    for token in (None, "wrong", TOKEN + "x", ""):
        code, reply = demo.control({"action": "pause"}, token)
        assert code == 403 and reply["error"] and "\n" not in reply["error"], reply
        assert TOKEN not in reply["error"]
    code, reply = demo.control({"action": "pause"}, None)
    assert "missing token" in reply["error"]
    wait_for("two more analysed steps", lambda: demo.status()["last_step"] >= before["last_step"] + 2, 60, demo)
    assert not demo.status()["paused"]
    assert "straggler_probe control:" not in demo.log()


def test_a_changed_significance_is_taken_at_the_next_step_and_the_report_written_now(demo: Demo):
    seen = demo.status()["last_step_seen"]
    code, reply = demo.control({"action": "significance", "significance": 1e-4,
                                "alarm_significance": 1e-6})
    assert code == 202, reply
    line = wait_for("the significance line", lambda: re.search(
        r"control: significance=0.0001 alarm_significance=1e-06 at step (\d+)", demo.log()), 60, demo)
    assert int(line.group(1)) <= seen + 2
    status = demo.status()
    assert status["significance"] == pytest.approx(1e-4)
    assert status["alarm_significance"] == pytest.approx(1e-6)
    # The analysis itself runs at the new level: the report written now says so.
    code, _ = demo.control({"action": "report"})
    assert code == 202
    wait_for("the report line", lambda: "control: report written" in demo.log(), 60, demo)
    report = json.loads((demo.out / "report" / "report.json").read_text())
    assert report["run"]["complete"] is False
    assert report["config"]["alpha"] == pytest.approx(1e-4)
    assert report["config"]["alarm_alpha"] == pytest.approx(1e-6)
    code, reply = demo.control({"action": "significance", "significance": 1.5})
    assert code == 400 and "between 0 and 1" in reply["error"]


def test_pause_and_resume_take_effect_within_two_steps(demo: Demo):
    seen = demo.status()["last_step_seen"]
    code, reply = demo.control({"action": "pause"})
    assert code == 202, reply
    line = wait_for("the pause line", lambda: re.search(r"control: analysis paused at step (\d+)", demo.log()), 60, demo)
    paused_at = int(line.group(1))
    assert paused_at <= seen + 2
    s = wait_for("steps seen while paused", lambda: (st := demo.status())["last_step_seen"] >= paused_at + 3 and st, 60, demo)
    assert s["paused"] and s["last_step"] < paused_at
    seen = s["last_step_seen"]
    code, _ = demo.control({"action": "resume"})
    assert code == 202
    line = wait_for("the resume line", lambda: re.search(r"control: analysis resumed at step (\d+)", demo.log()), 60, demo)
    resumed_at = int(line.group(1))
    assert seen < resumed_at <= seen + 2
    wait_for("analysed steps again", lambda: demo.status()["last_step"] >= resumed_at, 60, demo)
    assert f'step={paused_at}-{resumed_at - 1} skipped reason="paused' in demo.log()
    assert demo.log().count("straggler_probe control: analysis paused") == 1


def fuzz_cases(rng: random.Random, n: int) -> list[bytes]:
    """Malformed or refused requests, each carrying a marker that no reply may echo."""
    cases = []
    for i in range(n):
        mark = f"FUZZ{i}X".encode()
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200))) + mark
        kind = i % 10
        if kind == 0:  # random bytes
            cases.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 3000))) + mark + b"\r\n\r\n")
        elif kind == 1:  # methods
            m = rng.choice([b"PUT", b"DELETE", b"PATCH", b"G\x00T", b"get ", mark, b"HEAD"])
            cases.append(m + b" /" + rng.choice([b"metrics", b"status", b"control"]) + b" HTTP/1.1\r\n\r\n" + mark)
        elif kind == 2:  # paths and versions
            cases.append(b"GET " + rng.choice([b"/" + mark, b"*", b"http://x/" + mark, b"/metrics\x7f" + mark]) +
                         b" " + rng.choice([b"HTTP/1.1", b"HTTP/2.0", b"HTTP/9" + mark]) + b"\r\n\r\n")
        elif kind == 3:  # lengths that lie or cannot be read
            cl = rng.choice([b"-1", b"abc", mark, b"99999999999999999999999", b"5000", b"1, 2",
                             str(len(body) + rng.randrange(1, 50)).encode()])
            cases.append(b"POST /control HTTP/1.1\r\nAuthorization: Bearer " + TOKEN.encode() +
                         b"\r\nContent-Length: " + cl + b"\r\n\r\n" + body)
        elif kind == 4:  # bodies with the right token: not a change
            junk = rng.choice([body, b"[1,2]", b'{"action":"' + mark + b'"}', b'{"action":3}',
                               b'{"action":"significance","significance":"' + mark + b'"}',
                               b'{"action":"significance","significance":7}', b"{" * 300 + mark])
            cases.append(b"POST /control HTTP/1.1\r\nAuthorization: Bearer " + TOKEN.encode() +
                         b"\r\nContent-Length: " + str(len(junk)).encode() + b"\r\n\r\n" + junk)
        elif kind == 5:  # the right request without the right token
            auth = rng.choice([b"", b"Authorization: Bearer " + mark + b"\r\n",
                               b"Authorization: " + TOKEN.encode() + b"\r\n"])
            ok = b'{"action":"pause"}'
            cases.append(b"POST /control HTTP/1.1\r\n" + auth + b"Content-Length: " +
                         str(len(ok)).encode() + b"\r\n\r\n" + ok + mark)
        elif kind == 6:  # header lines
            cases.append(b"GET /metrics HTTP/1.1\r\n" + rng.choice([mark, b"Bad Name: " + mark, b"X: \x01" + mark,
                                                                   b"Transfer-Encoding: chunked\r\nX: " + mark]) + b"\r\n\r\n")
        elif kind == 7:  # too large
            cases.append(b"GET /" + mark * rng.randrange(1200, 3000) + b" HTTP/1.1\r\n\r\n")
        elif kind == 8:  # duplicate lengths, cut requests
            cases.append(rng.choice([b"POST /control HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx" + mark,
                                     b"GET /metrics HTTP/1.1\r\nHost: " + mark]))
        else:  # many headers
            cases.append(b"GET /status HTTP/1.1\r\n" + b"".join(b"X-%d: " % k + mark + b"\r\n" for k in range(80)) + b"\r\n")
    return cases


def send_raw(port: int, raw: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        try:
            s.sendall(raw)
            s.shutdown(socket.SHUT_WR)  # a cut request is answered, not waited for
        except OSError:
            pass  # the server answered (and closed) before reading it all
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    return reply


def test_fuzzed_requests_get_a_4xx_each_and_the_job_goes_on(demo: Demo):
    before = demo.status()
    for i, raw in enumerate(fuzz_cases(random.Random(25), 200)):
        reply = send_raw(demo.port, raw)
        status = re.match(rb"HTTP/1\.1 (\d{3}) ", reply)
        assert status and 400 <= int(status.group(1)) < 500, (i, raw[:120], reply[:200])
        assert f"FUZZ{i}X".encode() not in reply, (i, reply[:300])
        body = reply.split(b"\r\n\r\n", 1)[1]
        assert body.count(b"\n") == 1 and b"error" in body, (i, reply[:300])
    assert demo.alive(), demo.explain()
    after = demo.status()
    assert not after["paused"]  # nothing in the fuzz was a change
    assert after["health"]["state"] == "running"
    wait_for("the analysis going on", lambda: demo.status()["last_step_seen"] >= before["last_step_seen"] + 3, 60, demo)
    code, text = demo.request("GET", "/metrics")
    assert code == 200 and "straggler_probe_step_slowdown" in text


TAKEN_PORT_SCRIPT = """
import socket, sys, torch, straggler_probe as sp
taken = socket.socket()
taken.bind(("127.0.0.1", 0))
taken.listen(1)
assert sp.init(out_dir=sys.argv[1], warmup_steps=1, metrics_port=taken.getsockname()[1])
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(6):
    model(torch.randn(4, 8)).sum().backward()
    opt.step()
    opt.zero_grad()
steps = sp.stats()["step"]
sp.shutdown()
print("trained", steps)
"""


def test_a_port_already_taken_is_one_warning_and_the_job_goes_on(tmp_path: Path):
    env = dict(os.environ, PYTHONPATH=harness.package_path() or "", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", TAKEN_PORT_SCRIPT, str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "trained 6" in proc.stdout
    warnings = [l for l in proc.stderr.splitlines() if "metrics server is off" in l]
    assert len(warnings) == 1 and "cannot listen on 127.0.0.1:" in warnings[0], proc.stderr
    assert (tmp_path / "report.json").exists()
