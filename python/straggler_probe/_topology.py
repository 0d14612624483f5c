"""Where this process sits in the job: global rank and world size, and (for the analysis) its
data-parallel rank and pipeline stage.

Explicit settings win. Otherwise the rank comes from torch.distributed once it is initialised,
else from the launcher's RANK / WORLD_SIZE / LOCAL_RANK. The dp rank and stage are inferred
from the group DDP reduces over when it is a strict subgroup laid out in one of the two common
ways (contiguous blocks per stage, or strided); anything else stays unknown rather than guessed.
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
