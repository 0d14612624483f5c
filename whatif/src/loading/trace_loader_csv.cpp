// The CSV trace parser: the header mapping, then the rows (csv_row_parser.h: per-field parsing
// and per-row range checks in one pass over the text), in pieces on several threads for large
// traces, then the cross-row checks.
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
#include "csv_row_parser.h"
#include "straggler_probe/whatif/trace_loader.h"
#include "trace_loader_checks.h"
#include "trace_loader_schema.h"

namespace sp::whatif {
namespace {

using detail::Column;
using detail::kColumnNames;
using detail::LineReader;
using detail::kNumColumns;
using detail::RowParser;

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

// What every piece of the rows is parsed against.
struct RowSchema {
  const std::string& file;
  const JobMeta& meta;
  const std::array<int, kNumColumns>& position_of;
  bool in_schema_order;  // the header lists the columns in kColumnNames' order
};

// The line starting at p (ending at the next '\n' or `end`) split and parsed by the general
// path, which throws for a bad line; returns the start of the next line.
template <class Rows>
const char* parse_line(const RowParser& parser, const char* p, const char* end, size_t number,
                       const std::string& file, Rows& out) {
  const auto* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
  std::string_view line(p, static_cast<size_t>((nl ? nl : end) - p));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // files written on Windows
  if (line.empty()) throw TraceError(file, number, "", "empty line");
  std::array<std::string_view, kNumColumns> fields;
  const size_t n = split_fields(line, fields.data(), fields.size());
  if (n != kNumColumns) {
    throw TraceError(file, number, "", "expected " + std::to_string(kNumColumns) + " fields, found " + std::to_string(n));
  }
  parser.parse(fields.data(), number, out);
  return nl ? nl + 1 : end;
}

// Parses the data rows in `rows` (whole lines), the first of which is line `first_line`, into
// `out`: each row by the fast path when the header allows, else (or when it declines) by the
// general one. Each call has its own RowParser (it keeps per-row state), so pieces can be
// parsed concurrently. A trailing '\n' does not start an extra line.
template <class Rows>
void parse_rows(std::string_view rows, size_t first_line, const RowSchema& schema, Rows& out) {
  const RowParser parser(schema.file, schema.meta, schema.position_of);
  const char* p = rows.data();
  const char* const end = p + rows.size();
  for (size_t number = first_line; p < end; ++number) {
    const char* next = schema.in_schema_order ? parser.parse_fast(p, end, out) : nullptr;
    p = next ? next : parse_line(parser, p, end, number, schema.file, out);
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
  // Blocks with a 32-bit count, which GCC vectorises (std::count is not: 3x slower on SE).
  size_t newlines = 0;
  for (size_t at = 0; at < piece.size();) {
    const size_t block = std::min<size_t>(piece.size() - at, size_t{1} << 16);
    uint32_t in_block = 0;
    for (size_t i = 0; i < block; ++i) in_block += piece[at + i] == '\n';
    newlines += in_block;
    at += block;
  }
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

  bool in_schema_order = true;
  for (int c = 0; c < kNumColumns; ++c) in_schema_order = in_schema_order && position_of[static_cast<size_t>(c)] == c;
  const RowSchema schema{file_label, meta, position_of, in_schema_order};
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
