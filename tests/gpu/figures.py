"""gpu_figures.json, rewritten after every check (run.sh), so that a check that hangs or a command
that is killed still leaves every figure gathered so far in $OUT.

  figures.py FILE start                    a new file: {"checks": {}, "started": ...}
  figures.py FILE add NAME STATUS [RESULT]  one check's status (pass/fail/timeout/skipped/error)
                                            and its RESULT JSON (or a note)
  figures.py FILE summary                  prints one line per check; exit status = failures
"""
from __future__ import annotations

import json
import os
import sys
import time


def load(path: str) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {"checks": {}}


def save(path: str, data: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    path, verb = argv[1], argv[2]
    if verb == "start":
        save(path, {"checks": {}, "started": time.strftime("%Y-%m-%dT%H:%M:%S")})
        return 0
    data = load(path)
    if verb == "add":
        name, status = argv[3], argv[4]
        text = argv[5] if len(argv) > 5 else ""
        try:
            payload = json.loads(text) if text else None
        except ValueError:
            payload = {"note": text[-2000:]}
        data["checks"][name] = {"status": status, "result": payload,
                                "at": time.strftime("%H:%M:%S")}
        save(path, data)
        return 0
    failures = 0
    for name, c in data["checks"].items():
        print(f"  {name:14s} {c['status']}")
        failures += c["status"] in ("fail", "timeout", "error")
    return failures


if __name__ == "__main__":
    sys.exit(main(sys.argv))
