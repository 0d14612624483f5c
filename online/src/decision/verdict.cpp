// What verdict.h declares beside the verdict itself: the names of the causes, and a culprit's
// spelling ("rank:N", "stage:N") both ways.
#include "straggler_probe/online/verdict.h"

#include <charconv>
#include <ostream>
#include <string>
#include <system_error>
#include <utility>

namespace sp::online {

std::string_view cause_name(Cause c) {
  switch (c) {
    case Cause::kNone: return "none";
    case Cause::kWorker: return "worker";
    case Cause::kStageImbalance: return "stage-imbalance";
    case Cause::kSeqImbalance: return "seq-imbalance";
    case Cause::kGc: return "gc";
    case Cause::kComm: return "comm";
    case Cause::kCpuDelay: return "cpu-delay";
    case Cause::kHang: return "hang";
  }
  return "none";
}

namespace {

// A non-negative decimal int, nothing else (no sign, no spaces, no overflow).
std::optional<int> decimal(std::string_view s) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || s.front() == '-' || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<Culprit> Culprit::parse(std::string_view text) {
  if (text.empty()) return Culprit{};
  for (const auto& [prefix, kind] : {std::pair{std::string_view("rank:"), Kind::kRank},
                                     std::pair{std::string_view("stage:"), Kind::kStage}}) {
    if (text.substr(0, prefix.size()) != prefix) continue;
    if (const auto n = decimal(text.substr(prefix.size()))) return Culprit{kind, *n};
    return std::nullopt;
  }
  return std::nullopt;
}

std::string Culprit::text() const {
  switch (kind) {
    case Kind::kRank: return "rank:" + std::to_string(index);
    case Kind::kStage: return "stage:" + std::to_string(index);
    case Kind::kNone: break;
  }
  return {};
}

bool operator==(const Culprit& c, std::string_view text) { return c.text() == text; }

void PrintTo(const Culprit& c, std::ostream* os) { *os << '"' << c.text() << '"'; }

}  // namespace sp::online
