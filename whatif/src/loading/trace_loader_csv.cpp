// The CSV trace parser: header mapping, per-field parsing and per-row range checks in one
// pass over the text (SE's 107k rows parse in a few milliseconds), then the cross-row checks.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <future>
#include <thread>
#include <vector>

#include "csv_fields.h"
#include "straggler_probe/whatif/trace_loader.h"
#include "trace_loader_checks.h"
#include "trace_loader_schema.h"

namespace sp::whatif {
namespace {

using detail::Column;
using detail::kColumnNames;
using detail::LineReader;
using detail::kNumColumns;

// Splits a line at commas into at most `cap` fields; returns the true field count. A plain
// byte loop: one memchr per field costs more than the scan itself on ~8-byte fields.
size_t split_fields(std::string_view line, std::string_view* fields, size_t cap) {
  size_t n = 0;
  size_t start = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != ',') continue;
    if (n < cap) fields[n] = line.substr(start, i - start);
    ++n;
    start = i + 1;
  }
  if (n < cap) fields[n] = line.substr(start);
  return n + 1;
}

// Maps header position -> schema column.
std::array<int, kNumColumns> parse_header(std::string_view header, const std::string& file) {
  if (header.size() >= 3 && header.substr(0, 3) == "\xEF\xBB\xBF") header.remove_prefix(3);  // UTF-8 BOM
  std::array<int, kNumColumns> position_of{};
  position_of.fill(-1);
  int pos = 0;
  size_t start = 0;
  while (true) {
    const size_t comma = header.find(',', start);
    const std::string_view name =
        header.substr(start, (comma == std::string_view::npos ? header.size() : comma) - start);
    const auto it = std::find(kColumnNames.begin(), kColumnNames.end(), name);
    if (it == kColumnNames.end()) {
      throw TraceError(file, 1, std::string(name),
                       "not a column of the trace schema (expected " + detail::join(kColumnNames, ",") + ")");
    }
    const auto col = static_cast<size_t>(it - kColumnNames.begin());
    if (position_of[col] != -1) throw TraceError(file, 1, std::string(name), "appears twice in the header");
    position_of[col] = pos++;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  for (int c = 0; c < kNumColumns; ++c) {
    if (position_of[static_cast<size_t>(c)] == -1) {
      throw TraceError(file, 1, std::string(kColumnNames[static_cast<size_t>(c)]), "missing from the header");
    }
  }
  return position_of;
}

// Parses one data row (already split into header order) and checks it against the metadata.
class RowParser {
 public:
  RowParser(const std::string& file, const JobMeta& meta, const std::array<int, kNumColumns>& position_of)
      : file_(file), meta_(meta), position_of_(position_of) {}

  // `out` is a TraceTable or a RowSlots (anything with TraceTable's push_back).
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
    if (dur < 0) fail(Column::kDuration, "negative duration " + detail::format_number(dur));
    const auto seq = int_in(Column::kSeqId, 0, std::numeric_limits<int32_t>::max(), nullptr);
    // -1 marks "not applicable" (mc/gmc of collectives, mb_id of non-compute ops).
    const auto mc = int_in(Column::kMc, -1, meta_.vpp_size, "vpp_size");
    const auto mb = int_in(Column::kMbId, -1, std::numeric_limits<int32_t>::max(), nullptr);
    const auto gmc = int_in(Column::kGmc, -1, int64_t{meta_.pp_size} * meta_.vpp_size, "pp_size * vpp_size");
    out.push_back(dp, st, rk, step, type, start, dur, seq, mc, mb, gmc);
  }

 private:
  std::string_view field(Column c) const { return fields_[position_of_[static_cast<size_t>(c)]]; }

  [[noreturn, gnu::cold, gnu::noinline]] void fail(Column c, const std::string& message) const {
    throw TraceError(file_, line_, std::string(kColumnNames[static_cast<size_t>(c)]), message);
  }

  int64_t integer(Column c) const {
    const std::string_view s = field(c);
    const auto v = detail::parse_int64(s);
    if (!v) fail(c, s.empty() ? std::string("empty value") : "not an integer: " + detail::quote_value(s));
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
    const auto v = detail::parse_double(s);
    if (!v) fail(c, s.empty() ? std::string("empty value") : "not a number: " + detail::quote_value(s));
    if (!std::isfinite(*v)) fail(c, "not a finite number: " + detail::quote_value(s));
    return *v;
  }

  OpType op_type() const {
    const std::string_view s = field(Column::kOptype);
    if (s.empty()) fail(Column::kOptype, "empty value");
    // Traces hold long runs of one type, so the previous row's answer usually matches.
    if (s != op_type_name(last_type_)) {
      const auto t = parse_op_type(s);
      if (!t) fail(Column::kOptype, "unknown op type " + detail::quote_value(s));
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

// What every piece of the rows is parsed against.
struct RowSchema {
  const std::string& file;
  const JobMeta& meta;
  const std::array<int, kNumColumns>& position_of;
};

// Parses the data rows in `rows` (whole lines), the first of which is line `first_line`, into
// `out`. Each call has its own RowParser (it keeps per-row state), so pieces can be parsed
// concurrently.
template <class Rows>
void parse_rows(std::string_view rows, size_t first_line, const RowSchema& schema, Rows& out) {
  const std::string& file = schema.file;
  const RowParser parser(file, schema.meta, schema.position_of);
  LineReader lines(rows);
  std::string_view line;
  std::array<std::string_view, kNumColumns> fields;
  while (lines.next(line)) {
    const size_t number = first_line - 1 + lines.number();
    if (line.empty()) throw TraceError(file, number, "", "empty line");
    const size_t n = split_fields(line, fields.data(), fields.size());
    if (n != kNumColumns) {
      throw TraceError(file, number, "",
                       "expected " + std::to_string(kNumColumns) + " fields, found " + std::to_string(n));
    }
    parser.parse(fields.data(), number, out);
  }
}

// Rows [next, ...) of a table already sized for them: each piece of a parallel parse writes its
// own slice, so the pieces never need to be copied together.
struct RowSlots {
  TraceTable& table;
  size_t next;
  void push_back(int32_t dp, int32_t st, int32_t rk, int64_t sp, OpType t, double start, double dur, int32_t seq,
                 int32_t mchunk, int32_t mb, int32_t gchunk) {
    table.dp_rank[next] = dp;
    table.stage[next] = st;
    table.rank[next] = rk;
    table.step[next] = sp;
    table.optype[next] = t;
    table.start_ts[next] = start;
    table.duration[next] = dur;
    table.seq_id[next] = seq;
    table.mc[next] = mchunk;
    table.mb_id[next] = mb;
    table.gmc[next] = gchunk;
    ++next;
  }
};

void resize_rows(TraceTable& t, size_t n) {
  const auto resize = [n](auto& column) { column.resize(n); };
  resize(t.dp_rank);
  resize(t.stage);
  resize(t.rank);
  resize(t.step);
  resize(t.optype);
  resize(t.start_ts);
  resize(t.duration);
  resize(t.seq_id);
  resize(t.mc);
  resize(t.mb_id);
  resize(t.gmc);
}

// Up to `parts` pieces of whole lines, in order.
std::vector<std::string_view> split_at_lines(std::string_view rows, size_t parts) {
  std::vector<std::string_view> pieces;
  while (!rows.empty()) {
    const size_t left = parts - pieces.size();
    const size_t nl = left <= 1 ? std::string_view::npos : rows.find('\n', rows.size() / left);
    const size_t cut = nl == std::string_view::npos ? rows.size() : nl + 1;
    pieces.push_back(rows.substr(0, cut));
    rows.remove_prefix(cut);
  }
  return pieces;
}

// Lines in a piece of whole lines (the last one may lack its '\n').
size_t count_lines(std::string_view piece) {
  const auto newlines = static_cast<size_t>(std::count(piece.begin(), piece.end(), '\n'));
  return newlines + (!piece.empty() && piece.back() != '\n' ? 1 : 0);
}

// Below this the rows are parsed on the calling thread; above, in pieces on up to
// kMaxParseThreads threads (the 4096-GPU trace's 1.9M rows: about 0.55 s on one core).
constexpr size_t kParallelParseBytes = 4u << 20;
constexpr unsigned kMaxParseThreads = 8;

// The rows in pieces, in parallel. Every line is one row (or an error), so counting each
// piece's lines first gives both its first line number and its slice of the table. The first
// error in file order is the one reported.
TraceTable parse_rows_in_parallel(std::string_view rows, unsigned threads, const RowSchema& schema) {
  const std::vector<std::string_view> pieces = split_at_lines(rows, threads);
  std::vector<std::future<size_t>> line_counts;
  for (const std::string_view piece : pieces) {
    line_counts.push_back(std::async(std::launch::async, [piece] { return count_lines(piece); }));
  }
  std::vector<size_t> first_row(pieces.size() + 1, 0);
  for (size_t k = 0; k < pieces.size(); ++k) first_row[k + 1] = first_row[k] + line_counts[k].get();
  TraceTable table;
  resize_rows(table, first_row.back());
  std::vector<std::future<void>> parsed;
  for (size_t k = 0; k < pieces.size(); ++k) {
    parsed.push_back(std::async(std::launch::async, [&, k] {
      RowSlots slots{table, first_row[k]};
      parse_rows(pieces[k], first_row[k] + 2, schema, slots);  // line 1 is the header
    }));
  }
  for (auto& p : parsed) p.get();
  return table;
}

}  // namespace

TraceTable parse_trace_csv(std::string_view text, const std::string& file_label, const JobMeta& meta) {
  LineReader header(text);
  std::string_view line;
  if (!header.next(line)) throw TraceError(file_label, 0, "", "empty file (expected a header line)");
  if (line.empty()) throw TraceError(file_label, 1, "", "empty header line");
  const auto position_of = parse_header(line, file_label);
  const size_t header_end = text.find('\n');
  const std::string_view rows = header_end == std::string_view::npos ? std::string_view() : text.substr(header_end + 1);

  const RowSchema schema{file_label, meta, position_of};
  const unsigned threads = std::min(std::max(1u, std::thread::hardware_concurrency()), kMaxParseThreads);
  TraceTable table;
  if (rows.size() < kParallelParseBytes || threads == 1) {
    // Rows of the reference traces are ~80-100 bytes; a slight over-reserve is cheaper than regrowth.
    table.reserve(rows.size() / 64 + 1);
    parse_rows(rows, 2, schema, table);
  } else {
    table = parse_rows_in_parallel(rows, threads, schema);
  }
  if (table.size() == 0) throw TraceError(file_label, 1, "", "no data rows after the header");
  detail::check_cross_row(table, meta, file_label);
  return table;
}

TraceTable load_trace_csv(const std::string& path, const JobMeta& meta) {
  return parse_trace_csv(read_file_maybe_gzip(path), path, meta);
}

}  // namespace sp::whatif
