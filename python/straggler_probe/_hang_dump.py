"""STRAGGLER_PROBE_HANG_DUMP: when rank 0 suspects a hang (rank_pipeline/src/host_transport/hang_watch.h), each
rank that can still run appends every thread's Python stack to <out_dir>/hang_stacks_rank<R>.txt.

The notice reaches this rank through its pipeline (rank 0 tells its host's ranks over the host's
socket, and the other hosts' leaders through the store key they read anyway). A daemon thread of
the probe's own waits for it inside the pipeline, without the GIL, and dumps with faulthandler,
which walks every thread's frames without stopping them. Nothing runs on the training thread and
no signal handler is installed. Best effort: a frozen process dumps nothing (it learns of the
hang when it runs again, and dumps then), and a failure to write is one warning.
"""
from __future__ import annotations

import faulthandler
import os
import threading
import time
import warnings
from typing import Any, Callable

# How long one wait inside the pipeline lasts (the thread looks at its stop flag in between).
WAIT_S = 0.5


class HangDumper:
    def __init__(self, core: Any, out_dir: str, rank: Callable[[], int]):
        self._core = core
        self._out_dir = out_dir
        self._rank = rank
        self._stop = threading.Event()
        self._warned = False
        self.dumps = 0
        self._thread = threading.Thread(target=self._run, name="sp_hang_dump", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        seen = 0
        while not self._stop.is_set():
            try:
                episode = self._core.wait_hang_notice(seen, WAIT_S)
            except Exception:  # noqa: BLE001 - the pipeline is gone: nothing more to wait for
                return
            if not episode:
                self._stop.wait(0.2)  # no pipeline yet (or any more): it answers at once
                continue
            seen = episode
            self._dump(episode)

    def _dump(self, episode: int) -> None:
        rank = self._rank()
        path = os.path.join(self._out_dir, f"hang_stacks_rank{rank}.txt")
        try:
            os.makedirs(self._out_dir, exist_ok=True)
            with open(path, "a") as f:
                f.write(f"straggler_probe hang {episode} suspected by rank 0: stacks of rank {rank} "
                        f"(pid {os.getpid()}) at {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
                f.flush()
                faulthandler.dump_traceback(file=f, all_threads=True)
                f.write("\n")
            self.dumps += 1
        except Exception as err:  # noqa: BLE001 - best effort: say it once, keep training
            if not self._warned:
                self._warned = True
                warnings.warn(f"straggler_probe: cannot write the hang stack dump {path} "
                              f"({type(err).__name__}: {err})", RuntimeWarning, stacklevel=1)

    def close(self, timeout_s: float = 1.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)
