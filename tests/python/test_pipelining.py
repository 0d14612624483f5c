"""torch.distributed.pipelining jobs (pipelining_job.py) with init() called without arguments:
the probe must find each rank's stage and dp rank itself, attribute every forward, backward,
send and receive to its micro-batch, and name a heavier last stage or a slow worker for what it
is, with S >= 1 on every step.

The jobs sleep in forward and backward (workload.TimedNet), so the planted differences are
exact; what varies is the host (gloo, Python) on a shared 2-core machine. Steps from 10 on are
judged: by then the ideal window holds 8 analysed steps.
"""
from __future__ import annotations

import json
import re

import pytest

import harness
from conftest import analyzed

JUDGED_FROM = 10
NAMED_SHARE = 0.8  # the issue's bar: named right on at least 80% of the judged steps
INTERLEAVED_NAMED_SHARE = 0.9  # issue 8's follow-up bar for the interleaved schedule


def _run(spec: dict, tmp_path, world: int) -> harness.JobResult:
    result = harness.run_job(dict(spec, steps=24), tmp_path, world=world)
    assert result.returncodes == [0] * world, result.explain()
    return result


def _judged(result: harness.JobResult) -> list[dict]:
    steps = [s for s in analyzed(result) if s["step"] >= JUDGED_FROM]
    assert len(steps) >= 10, [(s.get("step"), s.get("skip_reason")) for s in result.steps]
    return steps


def _layouts(result: harness.JobResult) -> list[tuple]:
    """(pp_size, rank_stage, rank_dp) of every layout record: the JSONL writes the job's layout
    once, and again only when it changes."""
    return [(r["pp_size"], r["rank_stage"], r["rank_dp"]) for r in result.steps
            if r.get("event") == "layout"]


def _assert_never_below_one(result: harness.JobResult) -> None:
    low = [(s["step"], round(s["S"], 4), s["ideal_s"], s["time_s"]) for s in analyzed(result)
           if s["S"] < 1.0]
    assert not low, f"S < 1 (an ideal slower than the real step): {low}"


def _assert_named(steps: list[dict], cause: str, worst: str) -> None:
    hits = [s for s in steps if s["cause"] == cause and s["worst"] == worst]
    assert len(hits) >= NAMED_SHARE * len(steps), [
        (s["step"], s["cause"], s["worst"], round(s["S"], 3), s["evidence"]) for s in steps]


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_heavier_last_stage_is_stage_imbalance(tmp_path, schedule):
    # 2 stages, no dp; the last stage's forward and backward take 45% longer
    spec = {"pipelining": schedule, "pp": 2, "microbatches": 4, "last_stage_factor": 1.45,
            "log_ops": True}
    result = _run(spec, tmp_path, world=2)
    steps = _judged(result)
    assert _layouts(result) == [(2, [0, 1], [0, 0])], _layouts(result)
    _assert_named(steps, "stage-imbalance", "stage:1")
    _assert_never_below_one(result)
    for s in steps:  # what the line says fixing the stage recovers is at most all of it
        if s["cause"] == "stage-imbalance":
            assert s["worst_S"] <= s["S"] + 1e-9, s
            share = re.search(r"recovers ([0-9]+)%", s["evidence"])
            assert share is None or int(share.group(1)) <= 100, s["evidence"]
    _assert_microbatches(tmp_path, microbatches=4)


def test_interleaved_heavier_last_stage_is_stage_imbalance(tmp_path):
    # Interleaved 1F1B, 4 ranks x 2 virtual stages (rank r holds stages r and r + 4); the last
    # stage (7, on rank 3) takes 45% longer. The schedule posts each receive one action ahead
    # and waits for it when the compute needs it: recorded from the post, the transfer held the
    # receiver's own compute and the heavier stage was never seen.
    spec = {"pipelining": "interleaved", "pp": 4, "microbatches": 4, "last_stage_factor": 1.45,
            "log_ops": True}
    result = _run(spec, tmp_path, world=4)
    steps = _judged(result)
    assert _layouts(result) == [(4, [0, 1, 2, 3], [0] * 4)], _layouts(result)
    hits = [s for s in steps if s["cause"] == "stage-imbalance" and s["worst"] == "stage:3"]
    assert len(hits) >= INTERLEAVED_NAMED_SHARE * len(steps), [
        (s["step"], s["cause"], s["worst"], round(s["S"], 3), s["evidence"]) for s in steps]
    _assert_never_below_one(result)
    _assert_interleaved_microbatches(tmp_path, world=4, microbatches=4)


def test_pp_x_dp_slow_worker_is_named(tmp_path):
    # 2 stages x 2 dp ranks (mesh (dp, pp): rank = dp * 2 + stage), 1F1B, each stage under DDP;
    # rank 1 (stage 1 of pipeline 0) is 30% slower
    spec = {"pipelining": "1f1b", "pp": 2, "microbatches": 4, "slow_rank": 1,
            "slow_factor": 1.3}
    result = _run(spec, tmp_path, world=4)
    steps = _judged(result)
    assert _layouts(result) == [(2, [0, 1, 0, 1], [0, 0, 1, 1])], _layouts(result)
    _assert_named(steps, "worker", "rank:1")
    _assert_never_below_one(result)


def _assert_microbatches(out_dir, microbatches: int) -> None:
    """Every rank's forwards and backwards of a step are micro-batches 0..M-1, and each send
    and receive carries the micro-batch of the compute it feeds or follows: GPipe waits for its
    forward sends only after the last forward, so the completion order says nothing."""
    for rank in (0, 1):
        ops = json.loads((out_dir / f"ops_rank{rank}.json").read_text())
        for step in sorted({o["step"] for o in ops if o["step"] >= 2}):
            mine = [o for o in ops if o["step"] == step]
            for kind in ("forward", "backward"):
                assert sorted(o["mb"] for o in mine if o["kind"] == kind) == \
                    list(range(microbatches)), (rank, step, mine)
            p2p = [o for o in mine if o["kind"] in ("send", "recv")]
            assert sorted(o["mb"] for o in p2p if o["kind"] == "send") == \
                list(range(microbatches)), (rank, step, p2p)
            assert sorted(o["mb"] for o in p2p if o["kind"] == "recv") == \
                list(range(microbatches)), (rank, step, p2p)
            assert all(o["peer"] == 1 - rank for o in p2p), (rank, step, p2p)


def _assert_interleaved_microbatches(out_dir, world: int, microbatches: int) -> None:
    """With 2 stages per rank every micro-batch is computed twice per step and direction; each
    send and receive is tagged with a micro-batch of the schedule, every one equally often, and
    goes to a neighbour in the ring of ranks (stage s feeds s + 1, and rank world-1's stage
    feeds rank 0's next one)."""
    for rank in range(world):
        ops = json.loads((out_dir / f"ops_rank{rank}.json").read_text())
        neighbours = {(rank - 1) % world, (rank + 1) % world}
        for step in sorted({o["step"] for o in ops if o["step"] >= 2}):
            mine = [o for o in ops if o["step"] == step]
            for kind in ("forward", "backward"):
                assert sorted(o["mb"] for o in mine if o["kind"] == kind) == \
                    sorted(list(range(microbatches)) * 2), (rank, step, kind, mine)
            for kind in ("send", "recv"):
                mbs = [o["mb"] for o in mine if o["kind"] == kind]
                assert mbs and sorted(mbs) == sorted(list(range(microbatches)) *
                                                     (len(mbs) // microbatches)), (rank, step, mine)
            assert all(o["peer"] in neighbours for o in mine if o["kind"] in ("send", "recv")), \
                (rank, step, mine)


def test_a_posted_ahead_receive_starts_where_the_compute_after_its_post_ended():
    """gloo's p2p works have no future and say nothing before wait(). A receive posted, then
    computed over, then waited for starts where that compute ended (not at its post); one
    waited for with nothing computed since its post (1F1B's send + receive batches), a send, and
    a receive seen complete by is_completed() keep their issue."""
    import threading
    import time

    from straggler_probe import _native as N
    from straggler_probe.hooks.collectives import CollectiveHooks
    from straggler_probe.hooks.groups import GroupInfo

    class Recorder:
        failed = False
        in_region = False
        compute_end_ns = 0
        train_thread = threading.get_ident()

        def __init__(self):
            self.comm = []

        def record_comm(self, kind, coll, start_ns, end_ns, *args):  # noqa: ANN001, ANN002
            self.comm.append((kind, start_ns, end_ns))

        def fail(self, message):  # noqa: ANN001
            raise AssertionError(message)

    class FuturelessWork:
        def __init__(self, done_when_asked=False):  # noqa: ANN001
            self.done_when_asked = done_when_asked

        def get_future(self):  # noqa: ANN201
            raise RuntimeError("Work::getFuture not implemented.")

        def wait(self, timeout=None):  # noqa: ANN001, ANN201
            time.sleep(0.002)  # the transfer's last part: the wait blocks this long
            return True

        def is_completed(self):  # noqa: ANN201
            return self.done_when_asked

    rec = Recorder()
    hooks = CollectiveHooks(rec, dist=None, my_rank=0)
    info = GroupInfo(object(), "pp", [0, 1])

    def issue(kind: int, work: FuturelessWork):  # noqa: ANN202
        coll = N.COLL_RECV if kind == N.RECV else N.COLL_SEND
        issued = time.time_ns()
        return issued, hooks._finish(kind, coll, info, 1, 64, issued, True, work, 0, 0)  # noqa: SLF001

    def spans() -> list[tuple[int, int]]:
        out = [(start, end) for _, start, end in rec.comm]
        rec.comm.clear()
        return out

    # posted ahead: 20 ms of compute between the post and the wait
    recv_issued, recv = issue(N.RECV, FuturelessWork())
    send_issued, send = issue(N.SEND, FuturelessWork())
    time.sleep(0.02)
    rec.compute_end_ns = time.time_ns()
    recv.wait()
    send.wait()
    (recv_start, recv_end), (send_start, send_end) = spans()
    assert recv_start == rec.compute_end_ns and recv_end - recv_start >= 2_000_000
    assert send_start == send_issued and send_end - send_start >= 20_000_000
    # a send + receive batch waited for at once: nothing computed since the post
    recv_issued, recv = issue(N.RECV, FuturelessWork())
    recv.wait()
    assert spans()[0][0] == recv_issued
    # inside a forward (a wait there cuts it): the compute ran until the wait
    recv_issued, recv = issue(N.RECV, FuturelessWork())
    time.sleep(0.005)
    rec.in_region = True
    before_wait = time.time_ns()
    recv.wait()
    rec.in_region = False
    start, end = spans()[0]
    assert before_wait <= start and end - start < 5_000_000
    # seen complete without a wait
    polled_issued, polled = issue(N.RECV, FuturelessWork(done_when_asked=True))
    assert polled.is_completed()
    assert spans()[0][0] == polled_issued


def test_pipeline_replica_numbers_the_pipelines_of_a_mesh():
    from straggler_probe._topology import pipeline_replica

    # (dp, pp) = (2, 2): rank = dp * 2 + stage; pipelines [0, 1] and [2, 3]
    assert [pipeline_replica(g, 4) for g in ([0, 1], [2, 3])] == [0, 1]
    # (pp, dp) = (2, 2): rank = stage * 2 + dp; pipelines [0, 2] and [1, 3]
    assert [pipeline_replica(g, 4) for g in ([0, 2], [1, 3])] == [0, 1]
    # (dp, pp, tp) = (2, 2, 2): rank = dp * 4 + stage * 2 + tp: pipelines of stride 2
    groups = [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert [pipeline_replica(g, 8) for g in groups] == [0, 1, 2, 3]
    assert pipeline_replica([0, 1, 2, 3], 4) == 0  # pipeline only
    assert pipeline_replica([0, 3], 4) is None     # not a mesh's pipeline: unknown, not guessed
    assert pipeline_replica([1, 2], 4) is None


def test_p2p_tags_are_taken_in_build_order_per_direction_and_peer():
    from straggler_probe import _native as N
    from straggler_probe.hooks.pipelining import P2pTags

    tags = P2pTags()
    tags.add(N.SEND, 1, 3)
    tags.add(N.RECV, 1, 0)
    tags.add(N.SEND, 1, 4)
    assert tags.take(N.RECV, 1) == 0
    assert tags.take(N.SEND, 2) is None  # nothing built for that peer
    assert [tags.take(N.SEND, 1), tags.take(N.SEND, 1), tags.take(N.SEND, 1)] == [3, 4, None]


def test_hooks_wrap_an_already_imported_pipelining_and_restore_it():
    import threading

    import torch
    import torch.distributed as dist
    import torch.distributed.pipelining.stage as stage_module

    from straggler_probe.hooks.pipelining import PipeliningHooks

    class Recorder:
        failed = False
        p2p_tags = None
        train_thread = threading.get_ident()

    cls = stage_module._PipelineStageBase  # noqa: SLF001 - the class the hooks wrap
    names = ("forward_one_chunk", "backward_one_chunk", "get_fwd_send_ops", "get_bwd_recv_ops")
    before = {n: cls.__dict__[n] for n in names}
    rec = Recorder()
    undo = PipeliningHooks(rec, torch, dist, lambda dp, pp: None).install()
    try:
        for n in names:
            assert getattr(cls.__dict__[n], "_straggler_probe", False), n
            assert cls.__dict__[n].__wrapped__ is before[n]
        assert rec.p2p_tags is not None
    finally:
        undo()
    assert {n: cls.__dict__[n] for n in names} == before
    assert rec.p2p_tags is None
