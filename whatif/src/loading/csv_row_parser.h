// One CSV data row -> one table row, with its per-row range checks. Internal to the CSV loader.
//
// Two ways in, one set of rules. parse() takes a line already split into fields (any header
// order) and names the first problem it finds. parse_fast() reads a row in the schema's own
// column order straight from the text, without splitting it first (SE's 107k rows: about half
// the time); it accepts only rows parse() accepts, with the same values, and hands back
// (nullptr) any row it does not take, bad or merely unusual (a '\r\n' ending), for parse() to
// read or reject. So both ways accept, reject and report exactly the same rows.
#pragma once

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "csv_fields.h"
#include "straggler_probe/whatif/trace_table.h"
#include "trace_loader_schema.h"

namespace sp::whatif::detail {

class RowParser {
 public:
  RowParser(const std::string& file, const JobMeta& meta, const std::array<int, kNumColumns>& position_of)
      : file_(file), meta_(meta), position_of_(position_of) {}

  // `out` is a TraceTable or anything with TraceTable's push_back.
  template <class Rows>
  void parse(const std::string_view* fields, size_t line, Rows& out) const {
    line_ = line;
    fields_ = fields;
    const auto dp = int_in(Column::kDpRank, 0, meta_.dp_size, "dp_size");
    const auto st = int_in(Column::kStage, 0, meta_.pp_size, "pp_size");
    const auto rk = int_in(Column::kRank, 0, meta_.world_size, "world_size");
    const int64_t step = integer(Column::kStep);
    if (step < 0) fail(Column::kStep, "negative step " + std::to_string(step));
    const OpType type = op_type();
    const double start = finite(Column::kStartTs);
    const double dur = finite(Column::kDuration);
    if (dur < 0) fail(Column::kDuration, "negative duration " + format_number(dur));
    const auto seq = int_in(Column::kSeqId, 0, std::numeric_limits<int32_t>::max(), nullptr);
    // -1 marks "not applicable" (mc/gmc of collectives, mb_id of non-compute ops).
    const auto mc = int_in(Column::kMc, -1, meta_.vpp_size, "vpp_size");
    const auto mb = int_in(Column::kMbId, -1, std::numeric_limits<int32_t>::max(), nullptr);
    const auto gmc = int_in(Column::kGmc, -1, int64_t{meta_.pp_size} * meta_.vpp_size, "pp_size * vpp_size");
    out.push_back(dp, st, rk, step, type, start, dur, seq, mc, mb, gmc);
  }

  // The row starting at p, columns in schema order, ending in '\n' or at `end`. Returns the
  // start of the next row, or nullptr (nothing added) when parse() must decide.
  template <class Rows>
  const char* parse_fast(const char* p, const char* end, Rows& out) const {
    int64_t dp = 0, st = 0, rk = 0, step = 0, seq = 0, mc = 0, mb = 0, gmc = 0;
    double start = 0, dur = 0;
    OpType type{};
    if (!(p = int_field(p, end, dp)) || dp < 0 || dp >= meta_.dp_size) return nullptr;
    if (!(p = int_field(p, end, st)) || st < 0 || st >= meta_.pp_size) return nullptr;
    if (!(p = int_field(p, end, rk)) || rk < 0 || rk >= meta_.world_size) return nullptr;
    if (!(p = int_field(p, end, step)) || step < 0) return nullptr;
    if (!(p = op_type_field(p, end, type))) return nullptr;
    if (!(p = finite_field(p, end, start))) return nullptr;
    if (!(p = finite_field(p, end, dur)) || dur < 0) return nullptr;
    if (!(p = int_field(p, end, seq)) || seq < 0 || seq >= std::numeric_limits<int32_t>::max()) return nullptr;
    if (!(p = int_field(p, end, mc)) || mc < -1 || mc >= meta_.vpp_size) return nullptr;
    if (!(p = int_field(p, end, mb)) || mb < -1 || mb >= std::numeric_limits<int32_t>::max()) return nullptr;
    if (!(p = int_field(p, end, gmc, true)) || gmc < -1 || gmc >= int64_t{meta_.pp_size} * meta_.vpp_size) {
      return nullptr;
    }
    out.push_back(static_cast<int32_t>(dp), static_cast<int32_t>(st), static_cast<int32_t>(rk), step, type, start,
                  dur, static_cast<int32_t>(seq), static_cast<int32_t>(mc), static_cast<int32_t>(mb),
                  static_cast<int32_t>(gmc));
    return p;
  }

 private:
  // What parse_int64 accepts ('-'?, 1 to 18 digits), then ',' (or, for the last field, '\n'
  // or the end of the text); returns the position after the separator.
  static const char* int_field(const char* p, const char* end, int64_t& v, bool last = false) {
    const bool negative = p < end && *p == '-';
    p += negative;
    const char* digits = p;
    uint64_t x = 0;  // unsigned: a long run of digits wraps harmlessly before it is refused
    while (p < end && static_cast<unsigned>(*p - '0') <= 9) x = x * 10 + static_cast<unsigned>(*p++ - '0');
    if (p == digits || p - digits > 18) return nullptr;
    v = negative ? -static_cast<int64_t>(x) : static_cast<int64_t>(x);
    if (last && p == end) return p;
    return p < end && *p == (last ? '\n' : ',') ? p + 1 : nullptr;
  }

  // What parse_double accepts and is finite, then ','.
  static const char* finite_field(const char* p, const char* end, double& v) {
    const auto [stop, ec] = std::from_chars(p, end, v, std::chars_format::general);
    if (ec != std::errc() || stop == end || *stop != ',' || !std::isfinite(v)) return nullptr;
    return stop + 1;
  }

  // A known op type name, then ','. Traces hold long runs of one type, so the previous row's
  // type is tried first.
  const char* op_type_field(const char* p, const char* end, OpType& type) const {
    const std::string_view last = op_type_name(last_type_);
    if (static_cast<size_t>(end - p) > last.size() && std::memcmp(p, last.data(), last.size()) == 0 &&
        p[last.size()] == ',') {
      type = last_type_;
      return p + last.size() + 1;
    }
    const auto* comma = static_cast<const char*>(std::memchr(p, ',', static_cast<size_t>(end - p)));
    if (!comma) return nullptr;
    const auto t = parse_op_type(std::string_view(p, static_cast<size_t>(comma - p)));
    if (!t) return nullptr;
    type = last_type_ = *t;
    return comma + 1;
  }

  std::string_view field(Column c) const { return fields_[position_of_[static_cast<size_t>(c)]]; }

  [[noreturn, gnu::cold, gnu::noinline]] void fail(Column c, const std::string& message) const {
    throw TraceError(file_, line_, std::string(kColumnNames[static_cast<size_t>(c)]), message);
  }

  int64_t integer(Column c) const {
    const std::string_view s = field(c);
    const auto v = parse_int64(s);
    if (!v) fail(c, s.empty() ? std::string("empty value") : "not an integer: " + quote_value(s));
    return *v;
  }

  // An integer in [lo, hi); `limit` names the metadata size that sets hi, if any.
  int32_t int_in(Column c, int64_t lo, int64_t hi, const char* limit) const {
    const int64_t v = integer(c);
    if (v < lo || v >= hi) out_of_range(c, v, lo, hi, limit);
    return static_cast<int32_t>(v);
  }

  [[noreturn, gnu::cold, gnu::noinline]] void out_of_range(Column c, int64_t v, int64_t lo, int64_t hi,
                                                           const char* limit) const {
    const std::string name(kColumnNames[static_cast<size_t>(c)]);
    std::string msg = name + " " + std::to_string(v) + " out of range [" + std::to_string(lo) + ", ";
    msg += limit ? std::to_string(hi) + ") given " + limit + " " + std::to_string(hi) + " in the metadata"
                 : std::string("2^31)");
    fail(c, msg);
  }

  double finite(Column c) const {
    const std::string_view s = field(c);
    const auto v = parse_double(s);
    if (!v) fail(c, s.empty() ? std::string("empty value") : "not a number: " + quote_value(s));
    if (!std::isfinite(*v)) fail(c, "not a finite number: " + quote_value(s));
    return *v;
  }

  OpType op_type() const {
    const std::string_view s = field(Column::kOptype);
    if (s.empty()) fail(Column::kOptype, "empty value");
    if (s != op_type_name(last_type_)) {
      const auto t = parse_op_type(s);
      if (!t) fail(Column::kOptype, "unknown op type " + quote_value(s));
      last_type_ = *t;
    }
    return last_type_;
  }

  const std::string& file_;
  const JobMeta& meta_;
  const std::array<int, kNumColumns>& position_of_;
  mutable size_t line_ = 0;
  mutable const std::string_view* fields_ = nullptr;
  mutable OpType last_type_ = OpType::kForwardCompute;
};

}  // namespace sp::whatif::detail
