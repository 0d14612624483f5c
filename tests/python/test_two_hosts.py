"""Two hosts in one run: ranks 0-1 and ranks 2-3 in two network namespaces joined by a veth pair
on private test addresses made here (10.231.9.0/24), each namespace with its own host name (a UTS
namespace: "node-a", "node-b"). Each host's ranks elect their own leader (the Unix socket they
meet on lives in their network namespace), the verdicts name the slow rank's host, and
report.json and the JSONL carry the rank table. Needs root (ip netns, unshare); skipped without."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid

import pytest

import harness
from conftest import DP_SPEC

ADDR = {"a": "10.231.9.1", "b": "10.231.9.2"}


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def two_hosts():
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("unshare") is None:
        pytest.skip("needs root, ip and unshare to make network namespaces")
    tag = uuid.uuid4().hex[:6]
    ns = {h: f"sp9{h}{tag}" for h in "ab"}
    veth = {h: f"v{h}{tag}" for h in "ab"}
    try:
        for h in "ab":
            _ip("netns", "add", ns[h])
        _ip("link", "add", veth["a"], "type", "veth", "peer", "name", veth["b"])
        for h in "ab":
            _ip("link", "set", veth[h], "netns", ns[h])
            _ip("-n", ns[h], "addr", "add", f"{ADDR[h]}/24", "dev", veth[h])
            _ip("-n", ns[h], "link", "set", veth[h], "up")
            _ip("-n", ns[h], "link", "set", "lo", "up")
    except subprocess.CalledProcessError as err:
        for h in "ab":
            subprocess.run(["ip", "netns", "del", ns[h]], capture_output=True)
        pytest.skip(f"cannot make network namespaces here: {err.stderr.strip()}")
    yield ns, veth
    for h in "ab":
        subprocess.run(["ip", "netns", "del", ns[h]], capture_output=True)


def test_verdicts_and_report_name_the_host(tmp_path, two_hosts):
    ns, veth = two_hosts

    def per_rank(rank: int):
        h = "a" if rank < 2 else "b"
        prefix = ["ip", "netns", "exec", ns[h], "unshare", "--uts", "sh", "-c",
                  f'hostname node-{h} && exec "$@"', "sh"]
        return prefix, {"MASTER_ADDR": ADDR["a"], "GLOO_SOCKET_IFNAME": veth[h],
                        "LOCAL_RANK": str(rank % 2)}

    spec = dict(DP_SPEC, slow_rank=2, slow_factor=1.3)
    result = harness.run_job(spec, tmp_path, per_rank=per_rank)
    assert result.returncodes == [0, 0, 0, 0], result.explain()
    p0 = result.ranks[0]["stats"]["pipeline"]
    assert p0["transport_protocol"] == 1  # host-aggregated
    # one leader per namespace: two hosts, each posting its own messages
    leaders = [r for r in range(4) if result.ranks[r]["stats"]["pipeline"]["host_messages_sent"] > 0]
    assert len(leaders) == 2 and (leaders[0] < 2) != (leaders[1] < 2), leaders
    named = [l for l in result.lines if " worst=rank:2 " in l]
    assert named, result.stdout[0]
    assert all(" worst=rank:2 host=node-b " in l for l in named), named[:3]
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert [r["host"] for r in report["ranks"]] == ["node-a", "node-a", "node-b", "node-b"]
    assert [r["local_rank"] for r in report["ranks"]] == [0, 1, 0, 1]
    assert report["worst_hosts"].get("node-b", 0) >= len(named)
    tables = [json.loads(l)["rank_table"] for l in
              (tmp_path / "report" / "straggler_probe_steps.jsonl").read_text().splitlines()
              if l.startswith('{"rank_table"')]
    assert tables and [r["host"] for r in tables[-1]] == ["node-a", "node-a", "node-b", "node-b"]
    worst = [s for s in result.steps if s.get("analyzed") and s.get("worst") == "rank:2"]
    assert worst and all(s["worst_host"] == "node-b" for s in worst)
