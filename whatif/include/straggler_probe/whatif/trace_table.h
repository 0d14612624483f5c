// The columnar trace table: one row per recorded operation, in the paper's artifact schema.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "straggler_probe/whatif/op_type.h"

namespace sp::whatif {

// The job's parallel layout (the artifact's meta.yaml).
struct JobMeta {
  std::string trial_name;
  int64_t run_id = 0;
  int dp_size = 1;
  int pp_size = 1;
  int tp_size = 1;
  int dsp_size = 1;  // context parallel size
  int vpp_size = 1;
  int world_size = 1;
};

// Columns are parallel vectors of equal length. Times are seconds. start_ts and duration hold
// float32 values (the traces store float32) widened to double without change.
struct TraceTable {
  std::vector<int32_t> dp_rank;
  std::vector<int32_t> stage;
  std::vector<int32_t> rank;
  std::vector<int64_t> step;
  std::vector<OpType> optype;
  std::vector<double> start_ts;
  std::vector<double> duration;
  std::vector<int32_t> seq_id;
  std::vector<int32_t> mc;
  std::vector<int32_t> mb_id;
  std::vector<int32_t> gmc;

  size_t size() const { return optype.size(); }
  void reserve(size_t n);
  void push_back(int32_t dp, int32_t st, int32_t rk, int64_t sp, OpType t, double start, double dur,
                 int32_t seq, int32_t mchunk, int32_t mb, int32_t gchunk);
};

// One clear error about bad input: which file, which line (1-based, 0 if none) and column
// (name, empty if none), and what is wrong. what() gives the whole message on one line.
class TraceError : public std::runtime_error {
 public:
  TraceError(std::string file, size_t line, std::string column, const std::string& message);
  const std::string& file() const { return file_; }
  size_t line() const { return line_; }
  const std::string& column() const { return column_; }

 private:
  std::string file_;
  size_t line_;
  std::string column_;
};

}  // namespace sp::whatif
