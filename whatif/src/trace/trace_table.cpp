// TraceTable's row appends and TraceError's one-line message.
#include "straggler_probe/whatif/trace_table.h"

#include <utility>

namespace sp::whatif {

void TraceTable::reserve(size_t n) {
  dp_rank.reserve(n);
  stage.reserve(n);
  rank.reserve(n);
  step.reserve(n);
  optype.reserve(n);
  start_ts.reserve(n);
  duration.reserve(n);
  seq_id.reserve(n);
  mc.reserve(n);
  mb_id.reserve(n);
  gmc.reserve(n);
}

void TraceTable::push_back(int32_t dp, int32_t st, int32_t rk, int64_t sp, OpType t, double start,
                           double dur, int32_t seq, int32_t mchunk, int32_t mb, int32_t gchunk) {
  dp_rank.push_back(dp);
  stage.push_back(st);
  rank.push_back(rk);
  step.push_back(sp);
  optype.push_back(t);
  start_ts.push_back(start);
  duration.push_back(dur);
  seq_id.push_back(seq);
  mc.push_back(mchunk);
  mb_id.push_back(mb);
  gmc.push_back(gchunk);
}

namespace {

// "file:line: column 'c': message", leaving out the parts that are unknown, so that every
// error reads like a compiler diagnostic and editors can jump to it.
std::string format_trace_error(const std::string& file, size_t line, const std::string& column,
                               const std::string& message) {
  // Plain appends: GCC 12 warns falsely (-Wrestrict) on chains of operator+ here.
  std::string out = file.empty() ? std::string("<input>") : file;
  if (line > 0) {
    out.append(":");
    out.append(std::to_string(line));
  }
  out.append(": ");
  if (!column.empty()) {
    out.append("column '");
    out.append(column);
    out.append("': ");
  }
  out.append(message);
  return out;
}

}  // namespace

TraceError::TraceError(std::string file, size_t line, std::string column, const std::string& message)
    : std::runtime_error(format_trace_error(file, line, column, message)),
      file_(std::move(file)),
      line_(line),
      column_(std::move(column)) {}

}  // namespace sp::whatif
