#include "rank_row.h"

#include <charconv>

namespace sp::rank_pipeline {
namespace {

constexpr size_t kMaxHostName = 64;

bool is_host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

// The next space-separated field of `line`, consumed.
std::string_view field(std::string_view* line) {
  const size_t end = line->find(' ');
  std::string_view f = line->substr(0, end);
  line->remove_prefix(end == std::string_view::npos ? line->size() : end + 1);
  return f;
}

bool parse_int(std::string_view text, int* out) {
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

bool same(const RankInfo& a, const RankInfo& b) {
  return a.leader == b.leader && a.local_rank == b.local_rank && a.device == b.device &&
         a.host == b.host;
}

}  // namespace

std::string clean_host_name(std::string_view name) {
  std::string out;
  for (char c : name.substr(0, kMaxHostName)) out += is_host_char(c) ? c : '_';
  return out.empty() ? "unknown" : out;
}

online::RankTable places_of(const std::vector<RankInfo>& rows) {
  return online::RankTable(rows.begin(), rows.end());  // each row's place, sliced off
}

std::string encode_rank_row(const RankInfo& info) {
  return std::to_string(info.rank) + ' ' + std::to_string(info.leader) + ' ' +
         std::to_string(info.local_rank) + ' ' + std::to_string(info.device) + ' ' +
         clean_host_name(info.host) + '\n';
}

size_t parse_rank_rows(std::string_view text, std::vector<RankInfo>* table,
                       std::string* first_error) {
  size_t bad = 0;
  auto reject = [&](size_t row, const std::string& why) {
    if (bad++ == 0) *first_error = "rank table: row " + std::to_string(row) + " " + why;
  };
  for (size_t row = 0; !text.empty(); ++row) {
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) {
      reject(row, "is cut short");
      break;
    }
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    RankInfo info;
    const bool numbers = parse_int(field(&line), &info.rank) &&
                         parse_int(field(&line), &info.leader) &&
                         parse_int(field(&line), &info.local_rank) &&
                         parse_int(field(&line), &info.device);
    info.host = std::string(line);
    if (!numbers || info.host.empty() || clean_host_name(info.host) != info.host) {
      reject(row, "is malformed");
      continue;
    }
    if (info.rank < 0 || info.rank >= static_cast<int>(table->size())) {
      reject(row, "names rank " + std::to_string(info.rank) + " outside the world of " +
                      std::to_string(table->size()));
      continue;
    }
    RankInfo& slot = (*table)[static_cast<size_t>(info.rank)];
    if (!slot.host.empty() && !same(slot, info)) {
      reject(row, "contradicts an earlier row for rank " + std::to_string(info.rank));
      continue;
    }
    slot = std::move(info);
  }
  return bad;
}

}  // namespace sp::rank_pipeline
