"""Where this process sits in the job: global rank and world size, and (for the analysis) its
data-parallel rank and pipeline stage.

Explicit settings win. Otherwise the rank comes from torch.distributed once it is initialised,
else from the launcher's RANK / WORLD_SIZE / LOCAL_RANK. The dp rank and stage are inferred
from the group DDP reduces over when it is a strict subgroup laid out in one of the two common
ways (contiguous blocks per stage, or strided), or, for torch.distributed.pipelining, from the
PipelineStage and its pipeline group (pipeline_replica); anything else stays unknown rather
than guessed.
"""
from __future__ import annotations

import os
from typing import Any


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer (set by the launcher?)") from None


def resolve_rank_world(rank: int | None, world: int | None, dist: Any) -> tuple[int, int, int]:
    if dist is not None and dist.is_available() and dist.is_initialized():
        rank = dist.get_rank() if rank is None else rank
        world = dist.get_world_size() if world is None else world
    rank = _env_int("RANK") if rank is None else rank
    world = _env_int("WORLD_SIZE") if world is None else world
    local = _env_int("LOCAL_RANK")
    rank = 0 if rank is None else rank
    world = 1 if world is None else world
    if not 0 <= rank < world:
        raise ValueError(f"rank {rank} is outside the world of {world} ranks")
    return rank, world, rank if local is None else local


def infer_dp_pp(dp_ranks: list[int], my_rank: int, world: int) -> tuple[int, int] | None:
    """(dp_rank, pp_stage) from the global ranks of this rank's data-parallel group."""
    n = len(dp_ranks)
    if n == 0 or my_rank not in dp_ranks or world % n != 0:
        return None
    dp_rank = dp_ranks.index(my_rank)
    if n == world:
        return dp_rank, 0
    stages = world // n
    ordered = sorted(dp_ranks)
    if ordered == list(range(ordered[0], ordered[0] + n)) and ordered[0] % n == 0:
        return dp_rank, ordered[0] // n          # stage-major: [0..n), [n..2n), ...
    if ordered == list(range(ordered[0], world, stages)) and ordered[0] < stages:
        return dp_rank, ordered[0]               # dp-major: stage s holds s, s+P, s+2P, ...
    return None


def pipeline_replica(pp_ranks: list[int], world: int) -> int | None:
    """Which pipeline replica (the dp rank of the analysis) a pipeline group is, from its global
    ranks in stage order, or None when the layout is not one of a row-major device mesh.

    In a row-major mesh with the pipeline as one dimension of stride s (any dims before it, any
    of total size s after it: (dp, pp), (pp, dp), (dp, pp, tp)...), rank = a * P * s + p * s + b
    with stage p < P, b < s. The group of stage ranks is then o + p * s for o = a * P * s + b, and
    the replica a * s + b numbers the W / P pipelines 0, 1, ... the same way on every stage.
    """
    n = len(pp_ranks)
    if n == 0 or world % n != 0:
        return None
    if n == 1:
        return pp_ranks[0]
    offset, stride = pp_ranks[0], pp_ranks[1] - pp_ranks[0]
    if stride <= 0 or pp_ranks != [offset + p * stride for p in range(n)]:
        return None
    block = n * stride
    if world % block != 0 or offset % block >= stride:
        return None
    return (offset // block) * stride + offset % block
