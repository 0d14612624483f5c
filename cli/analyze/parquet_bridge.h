// Parquet traces (the paper artifact's format) through pyarrow: the trace is converted to our
// CSV schema by python/straggler_probe/trace_io.py in a child process, then loaded by the
// strict CSV loader like any other trace. This keeps a Parquet/Arrow C++ stack out of the
// build while reading exactly what the artifact reads (pyarrow is already a project
// dependency); float32 times are written with 17 significant digits, so nothing is lost.
#pragma once

#include <string>

namespace sp::cli {

// True when the file starts with Parquet's magic bytes "PAR1" (whatever its name).
bool is_parquet_file(const std::string& path);

// A converted trace in a private temporary directory, removed on destruction.
class ConvertedTrace {
 public:
  explicit ConvertedTrace(std::string dir);
  ~ConvertedTrace();
  ConvertedTrace(ConvertedTrace&& other) noexcept;
  ConvertedTrace(const ConvertedTrace&) = delete;
  ConvertedTrace& operator=(const ConvertedTrace&) = delete;
  ConvertedTrace& operator=(ConvertedTrace&&) = delete;
  std::string csv_path() const { return dir_ + "/trace.csv"; }

 private:
  std::string dir_;
};

// Runs the converter. The interpreter is $STRAGGLER_PROBE_PYTHON, else the active virtualenv's
// ($VIRTUAL_ENV), else the source tree's .venv, else python3 on PATH. Problems in the file
// itself are BadInput (exit 2, the converter's one-line message); a missing pyarrow or Python
// is a std::runtime_error saying what to install (exit 1). Converter warnings (e.g. extra
// columns it ignored) go to spdlog.
ConvertedTrace convert_parquet_to_csv(const std::string& parquet_path);

}  // namespace sp::cli
