"""Where a rank's identity comes from before and after the process group exists (_identity.py):
launchers that set RANK, launchers that do not (Lightning's), and disagreements."""
from __future__ import annotations

import pytest

from straggler_probe import _identity as I


class FakeDist:
    def __init__(self, rank: int | None, world: int = 4):
        self.rank, self.world = rank, world

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return self.rank is not None

    def get_rank(self) -> int:
        return self.rank

    def get_world_size(self) -> int:
        return self.world


def test_torchrun_variables_are_believed_until_the_group_exists():
    env = {"RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "2"}
    ident, warning = I.resolve(None, None, FakeDist(None), env)
    assert (ident.rank, ident.world, ident.local_rank, ident.source) == (2, 4, 2, I.ENVIRONMENT)
    assert not ident.live and warning is None
    ident, warning = I.resolve(None, None, FakeDist(2), env)
    assert ident.live and (ident.rank, ident.world) == (2, 4) and warning is None


def test_lightning_children_have_no_rank_and_are_corrected_silently():
    # Lightning's launcher: LOCAL_RANK, WORLD_SIZE and NODE_RANK, but no RANK
    env = {"LOCAL_RANK": "3", "WORLD_SIZE": "4", "NODE_RANK": "0"}
    ident, _ = I.resolve(None, None, FakeDist(None), env)
    assert (ident.rank, ident.world, ident.source) == (3, 4, I.GUESS)
    # two nodes of two: node 1's local rank 1 is rank 3
    ident, _ = I.resolve(None, None, None, {"LOCAL_RANK": "1", "WORLD_SIZE": "4",
                                             "NODE_RANK": "1", "LOCAL_WORLD_SIZE": "2"})
    assert ident.rank == 3
    # Lightning's first process sees nothing at init(): 0 of 1, then the group's 0 of 4
    told, _ = I.resolve(None, None, FakeDist(None), {})
    assert (told.rank, told.world) == (0, 1)
    live = I.Identity(0, 4, 0, I.PROCESS_GROUP)
    assert I.disagreement(told, live) is None


def test_a_told_rank_that_the_group_contradicts_is_one_warning_naming_both():
    env = {"RANK": "1", "WORLD_SIZE": "4"}
    ident, warning = I.resolve(None, None, FakeDist(2), env)
    assert ident.live and ident.rank == 2
    assert "rank 1 of 4" in warning and "RANK/WORLD_SIZE" in warning and "rank 2 of 4" in warning
    ident, warning = I.resolve(0, 4, FakeDist(3), {})
    assert ident.rank == 3 and "init()" in warning


def test_malformed_or_impossible_values_are_errors():
    with pytest.raises(ValueError, match="RANK='x'"):
        I.resolve(None, None, None, {"RANK": "x", "WORLD_SIZE": "2"})
    with pytest.raises(ValueError, match="outside the world"):
        I.resolve(None, None, None, {"RANK": "4", "WORLD_SIZE": "4"})
    # a local rank beyond the world is no basis for a guess: 0, corrected later
    ident, _ = I.resolve(None, None, None, {"LOCAL_RANK": "7", "WORLD_SIZE": "4"})
    assert ident.rank == 0 and ident.local_rank == 7
