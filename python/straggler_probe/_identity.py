"""Who this process is in the job (global rank, world size, local rank) and where that came from.

init() usually runs before torch.distributed is initialised, and launchers differ in what they
tell a process: torchrun sets RANK, WORLD_SIZE and LOCAL_RANK; Lightning's own launcher gives
its children LOCAL_RANK and WORLD_SIZE but not RANK, and its first process nothing at all until
it has started the others. So what init() sees is provisional, and the live process group, once
it exists, is the truth: the probe re-checks at each step boundary until it has seen it
(_probe.py), and a rank that was *told* something else (init(rank=...), RANK) gets one warning
saying so. A rank that was told nothing is corrected silently: nobody claimed otherwise.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Mapping

# where an identity came from, in the order they are believed
PROCESS_GROUP = "the process group"
EXPLICIT = "init()"
ENVIRONMENT = "RANK/WORLD_SIZE"
GUESS = "a guess"  # no RANK: LOCAL_RANK (+ NODE_RANK x LOCAL_WORLD_SIZE), or 0 of 1


@dataclasses.dataclass(frozen=True)
class Identity:
    rank: int
    world: int
    local_rank: int
    source: str

    @property
    def live(self) -> bool:
        return self.source == PROCESS_GROUP

    def describe(self) -> str:
        return f"rank {self.rank} of {self.world} (from {self.source})"


def _env_int(environ: Mapping[str, str], name: str) -> int | None:
    """A launcher's variable as a number; unset or empty is None, anything else an error."""
    raw = environ.get(name, "")
    text = raw.strip()
    if text and not text.lstrip("+-").isdigit():
        raise ValueError(f"{name}={raw!r} is not an integer (set by the launcher?)")
    return int(text) if text else None


def from_process_group(dist: Any) -> tuple[int, int] | None:
    """(rank, world) of the default process group, or None before it exists."""
    try:
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return None
        return int(dist.get_rank()), int(dist.get_world_size())
    except Exception:  # noqa: BLE001 - a group torch is tearing down: not known yet
        return None


def resolve(rank: int | None, world: int | None, dist: Any,
            environ: Mapping[str, str] | None = None) -> tuple[Identity, str | None]:
    """The best identity now, and a warning when two sources disagree (None otherwise)."""
    environ = os.environ if environ is None else environ
    local = _env_int(environ, "LOCAL_RANK")
    told = told_identity(rank, world, environ, local)
    live = from_process_group(dist)
    if live is None:
        return told, None
    found = Identity(live[0], live[1], told.local_rank, PROCESS_GROUP)
    return found, disagreement(told, found)


def told_identity(rank: int | None, world: int | None, environ: Mapping[str, str],
                  local: int | None) -> Identity:
    """What init()'s arguments or the launcher's variables say, before any process group."""
    env_rank, env_world = _env_int(environ, "RANK"), _env_int(environ, "WORLD_SIZE")
    if rank is not None or world is not None:
        source = EXPLICIT
    elif env_rank is not None:
        source = ENVIRONMENT
    else:
        source = GUESS
    world = world if world is not None else (env_world if env_world is not None else 1)
    if rank is None:
        rank = env_rank
    if rank is None:
        rank = _guess_rank(environ, local, world)
    if not 0 <= rank < world:
        raise ValueError(f"rank {rank} is outside the world of {world} ranks")
    return Identity(rank, world, rank if local is None else local, source)


def _guess_rank(environ: Mapping[str, str], local: int | None, world: int) -> int:
    # Lightning's launcher: NODE_RANK (or GROUP_RANK) and LOCAL_RANK; one node when neither says
    node = _env_int(environ, "NODE_RANK")
    node = _env_int(environ, "GROUP_RANK") if node is None else node
    per_node = _env_int(environ, "LOCAL_WORLD_SIZE")
    if local is None:
        return 0
    guess = local if not node or not per_node else node * per_node + local
    return guess if 0 <= guess < world else 0


def disagreement(told: Identity, live: Identity) -> str | None:
    """One sentence when what this rank was told is not what the process group says."""
    if told.source == GUESS or (told.rank, told.world) == (live.rank, live.world):
        return None
    return (f"this process was told it is rank {told.rank} of {told.world} (by {told.source}) "
            f"but torch.distributed says rank {live.rank} of {live.world}; the probe uses the "
            "process group's numbers")
