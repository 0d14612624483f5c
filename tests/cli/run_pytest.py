"""Runs pytest on the given files, or exits 77 (CTest's "skipped") when pytest is missing.

CTest picks the interpreter at configure time; a machine without the project's virtualenv
should see the Parquet test reported as skipped, with the reason, not as a failure.
"""

import importlib.util
import sys

if importlib.util.find_spec("pytest") is None:
    print(f"SKIP: pytest is not installed for {sys.executable} (run scripts/setup.sh)")
    sys.exit(77)

import pytest  # noqa: E402

sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]]))
