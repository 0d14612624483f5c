"""Parquet traces (the paper artifact's format) to straggler_probe's CSV trace schema.

The C++ engine reads CSV (plain or gzip); Parquet goes through pyarrow here, so the build
needs no Arrow C++ stack. The CLI runs this file directly as a script (it imports nothing
from the package), or it runs as ``python -m straggler_probe.trace_io``::

    python trace_io.py to-csv trace.parquet trace.csv

Conversion is exact: times (float32 in the artifact's files) are widened to float64 and
printed with 17 significant digits, which read back bit for bit. Row order is kept, so CSV
line = Parquet row + 2 and the C++ loader's errors point at the right row.

Validation of values (NaN, negative durations, ranges, duplicates) is the C++ loader's job;
this module only rejects what cannot be written faithfully as CSV: a missing column, a null
where the schema has no "not applicable" value, a non-integer in an integer column. Nulls in
mc / mb_id / gmc become -1, the schema's "not applicable". Columns outside the schema are
dropped with a warning (the artifact's own readers ignore them too).

Exit codes: 0 done, 2 bad input (one line on stderr), 3 pyarrow missing.
"""

from __future__ import annotations

import math
import sys

SCHEMA = ("dp_rank", "stage", "rank", "step", "optype", "start_ts", "duration",
          "seq_id", "mc", "mb_id", "gmc")
TIME_COLUMNS = ("start_ts", "duration")
NULL_AS_MINUS_ONE = ("mc", "mb_id", "gmc")

EXIT_BAD_INPUT = 2
EXIT_NO_PYARROW = 3


class TraceInputError(Exception):
    """A problem with the input file; str() is the whole one-line message."""


def format_time(value: float | None) -> str:
    """Exact text of a float32/float64 time: 17 significant digits round-trip any double."""
    if value is None:
        return "nan"  # the C++ loader reports it with its line and column
    return "%.17g" % value


def _int_column(name: str, values: list, path: str) -> list[int]:
    out = []
    for row, v in enumerate(values):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            if name in NULL_AS_MINUS_ONE:
                out.append(-1)
                continue
            raise TraceInputError(f"{path}: row {row}: column '{name}': null value")
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TraceInputError(f"{path}: row {row}: column '{name}': not an integer: {v!r}")
        if isinstance(v, float):
            if not v.is_integer():
                raise TraceInputError(f"{path}: row {row}: column '{name}': not an integer: {v!r}")
            v = int(v)
        out.append(v)
    return out


def _time_column(name: str, values: list, path: str) -> list:
    for row, v in enumerate(values):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise TraceInputError(f"{path}: row {row}: column '{name}': not a number: {v!r}")
    return values


def _optype_column(values: list, path: str) -> list[str]:
    for row, v in enumerate(values):
        if not isinstance(v, str):
            raise TraceInputError(f"{path}: row {row}: column 'optype': expected a string, found {v!r}")
        if "," in v or "\n" in v or "\r" in v:
            raise TraceInputError(f"{path}: row {row}: column 'optype': unknown op type {v[:40]!r}")
    return values


def read_parquet_columns(path: str) -> dict[str, list]:
    """The trace's schema columns as Python lists, checked and normalised (see module doc)."""
    import pyarrow.parquet as pq  # imported here so --help works without pyarrow

    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:  # pyarrow.ArrowInvalid is a ValueError
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TraceInputError(f"{path}: not a readable Parquet file: {first_line}") from None
    names = table.column_names
    for name in SCHEMA:
        if name not in names:
            raise TraceInputError(f"{path}: column '{name}': missing from the file")
    # pandas' saved index ("__index_level_0__") is bookkeeping, not data: not worth a warning.
    extra = [n for n in names if n not in SCHEMA and not n.startswith("__index_level_")]
    if extra:
        print(f"warning: {path}: ignoring columns outside the trace schema: {', '.join(extra)}",
              file=sys.stderr)
    columns = {}
    for name in SCHEMA:
        values = table.column(name).to_pylist()
        if name in TIME_COLUMNS:
            columns[name] = _time_column(name, values, path)
        elif name == "optype":
            columns[name] = _optype_column(values, path)
        else:
            columns[name] = _int_column(name, values, path)
    return columns


def parquet_to_csv(src: str, dst: str) -> int:
    """Converts src (Parquet) to dst (CSV, reference schema). Returns the number of rows."""
    cols = read_parquet_columns(src)
    n = len(cols["dp_rank"])
    with open(dst, "w", encoding="utf-8", newline="\n") as out:
        out.write(",".join(SCHEMA) + "\n")
        c = [cols[name] for name in SCHEMA]
        for i in range(n):
            out.write(f"{c[0][i]},{c[1][i]},{c[2][i]},{c[3][i]},{c[4][i]},"
                      f"{format_time(c[5][i])},{format_time(c[6][i])},"
                      f"{c[7][i]},{c[8][i]},{c[9][i]},{c[10][i]}\n")
    return n


USAGE = "usage: trace_io.py to-csv TRACE.parquet OUT.csv"


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] != "to-csv":
        print(USAGE, file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        import pyarrow  # noqa: F401
    except ImportError as exc:
        print(f"reading Parquet needs pyarrow ({exc}); pip install pyarrow", file=sys.stderr)
        return EXIT_NO_PYARROW
    try:
        parquet_to_csv(argv[1], argv[2])
    except TraceInputError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    except FileNotFoundError:
        print(f"{argv[1]}: cannot open: No such file or directory", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
