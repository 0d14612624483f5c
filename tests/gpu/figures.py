"""gpu_figures.json, rewritten after every check (run.sh), so that a check that hangs or a command
that is killed still leaves every figure gathered so far in $OUT.

  figures.py FILE start [KEY=VALUE...]          a new file: {"checks": {}, "started": ..., KEY: VALUE}
  figures.py FILE add NAME STATUS [RESULT] [SECONDS]
                                                one check's status (pass/fail/timeout/skipped/
                                                error), its RESULT JSON (or a note; @PATH reads it
                                                from a file) and how long it ran
  figures.py FILE summary                       prints one line per check; exit status = failures
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
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def _payload(text: str):
    if text.startswith("@"):
        try:
            with open(text[1:]) as f:
                text = f.read()
        except OSError as err:
            return {"note": f"no result file: {err}"}
    text = text.strip()
    try:
        return json.loads(text) if text else None
    except ValueError:
        return {"note": text[-3000:]}


def main(argv: list[str]) -> int:
    path, verb = argv[1], argv[2]
    if verb == "start":
        data = {"checks": {}, "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
        for kv in argv[3:]:
            key, _, value = kv.partition("=")
            data[key] = value
        save(path, data)
        return 0
    data = load(path)
    if verb == "add":
        name, status = argv[3], argv[4]
        entry = {"status": status, "result": _payload(argv[5] if len(argv) > 5 else ""),
                 "at": time.strftime("%H:%M:%S")}
        if len(argv) > 6:
            entry["seconds"] = float(argv[6])
        data["checks"][name] = entry
        save(path, data)
        return 0
    failures = 0
    for name, c in data["checks"].items():
        took = f" ({c['seconds']:.0f} s)" if "seconds" in c else ""
        print(f"  {name:15s} {c['status']}{took}")
        failures += c["status"] in ("fail", "timeout", "error")
    return failures


if __name__ == "__main__":
    sys.exit(main(sys.argv))
