#include "hang_line.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace sp::rank_pipeline {
namespace {

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fs", s);
  return buf;
}

std::string ms_seconds(int64_t ms) { return seconds(static_cast<double>(ms) / 1e3); }

const RankInfo* row(const std::vector<RankInfo>& table, int rank) {
  if (rank < 0 || static_cast<size_t>(rank) >= table.size()) return nullptr;
  const RankInfo& r = table[static_cast<size_t>(rank)];
  return r.host.empty() ? nullptr : &r;
}

int gpu_number(const RankInfo* r) {
  if (r == nullptr) return -1;
  return r->device >= 0 ? r->device : r->local_rank;
}

// How the line and report.json write a GPU: "?" when unknown.
std::string gpu_text(int gpu) { return gpu >= 0 ? std::to_string(gpu) : "?"; }

// "rank:2 host=vm gpu=2 last=forward mb=0 step=12 17.2s ago"
std::string describe_rank(const RankView& v, const std::vector<RankInfo>& table) {
  const RankInfo* r = row(table, v.rank);
  std::string out = "rank:" + std::to_string(v.rank) + " host=" + (r ? r->host : "?") +
                    " gpu=" + gpu_text(gpu_number(r));
  if (!v.known) return out + " last=unknown";
  out += " last=" + describe_op(v.hb);
  if (v.hb.has_event) {
    out += " step=" + std::to_string(v.hb.event_step) + " " + ms_seconds(v.hb.event_age_ms) + " ago";
  }
  return out;
}

std::string rank_list(const std::vector<int>& ranks, size_t max) {
  std::string out;
  for (size_t i = 0; i < ranks.size() && i < max; ++i) {
    if (i > 0) out += ',';
    out += std::to_string(ranks[i]);
  }
  if (ranks.size() > max) out += ",+" + std::to_string(ranks.size() - max);
  return out;
}

void add_named(std::string* out, const char* label, const std::vector<int>& ranks,
               const JobView& view, const std::vector<RankInfo>& table) {
  if (ranks.empty()) return;
  if (!out->empty()) *out += "; ";
  *out += label;
  *out += '=';
  for (size_t i = 0; i < ranks.size() && i < kNamedPerKind; ++i) {
    if (i > 0) *out += ", ";
    *out += describe_rank(view.ranks[static_cast<size_t>(ranks[i])], table);
  }
  if (ranks.size() > kNamedPerKind) {
    *out += ", +" + std::to_string(ranks.size() - kNamedPerKind) + " more";
  }
}

// "unseen=5,6,7 (leader rank:4 silent)" or "(their hosts have not answered)".
std::string unseen_part(const JobView& view, const std::vector<RankInfo>& table) {
  std::string why = "their hosts have not answered";
  for (int r : view.unseen) {
    const RankInfo* info = row(table, r);
    if (info && info->leader >= 0 && static_cast<size_t>(info->leader) < view.ranks.size() &&
        view.ranks[static_cast<size_t>(info->leader)].state == RankState::kSilent) {
      why = "leader rank:" + std::to_string(info->leader) + " silent";
      break;
    }
  }
  return "unseen=" + rank_list(view.unseen, 8) + " (" + why + ")";
}

// "3 ranks waiting (0,1,3) last=forward mb=0 17.1s ago": the op most of them were last in.
std::string waiting_part(const JobView& view) {
  std::map<std::string, int> ops;
  int64_t oldest = 0;
  for (int r : view.waiting) {
    const RankView& v = view.ranks[static_cast<size_t>(r)];
    ops[describe_op(v.hb)]++;
    if (v.hb.has_event) oldest = std::max(oldest, v.hb.event_age_ms);
  }
  std::string common;
  int most = 0;
  for (const auto& [op, n] : ops) {
    if (n > most) common = op, most = n;
  }
  const size_t n = view.waiting.size();
  return std::to_string(n) + (n == 1 ? " rank" : " ranks") + " waiting (" +
         rank_list(view.waiting, 8) + ") last=" + common + " " + ms_seconds(oldest) + " ago";
}

}  // namespace

std::string hang_line(HangLineKind kind, const JobView& view, const std::vector<RankInfo>& table,
                      int64_t step, double stalled_s, double bound_s) {
  std::string named;
  add_named(&named, "silent", view.silent, view, table);
  add_named(&named, "behind", view.behind, view, table);
  if (!view.unseen.empty()) {
    if (!named.empty()) named += "; ";
    named += unseen_part(view, table);
  }
  if (view.silent.empty() && view.behind.empty()) {
    named = named.empty() ? "no rank silent or behind" : "no rank silent or behind; " + named;
  }
  std::string line = kind == HangLineKind::kSuspected ? "straggler_probe hang suspected step="
                                                      : "straggler_probe hang still suspected step=";
  line += std::to_string(step) + " " + named;
  if (!view.waiting.empty()) line += "; " + waiting_part(view);
  line += "; no step for " + seconds(stalled_s) + " (bound " + seconds(bound_s) + ")";
  return line;
}

std::string named_summary(const JobView& view) {
  std::string out;
  auto add = [&out](const char* label, const std::vector<int>& ranks) {
    if (ranks.empty()) return;
    if (!out.empty()) out += ' ';
    out += label;
    out += rank_list(ranks, 8);
  };
  add("silent=rank:", view.silent);
  add("behind=rank:", view.behind);
  add("unseen=rank:", view.unseen);
  return out.empty() ? "no rank silent or behind" : out;
}

std::string resumed_line(int64_t step, double after_s, const std::string& named) {
  return "straggler_probe hang resumed step=" + std::to_string(step) + " after " +
         seconds(after_s) + " (named " + named + ")";
}

namespace {

// What rank 0 knows of one rank the episode names or finds waiting: the one reading of a
// RankView and the rank table, for report.json's "named" and for the metrics.
HangRank hang_rank(const char* state, const RankView& v, const std::vector<RankInfo>& table) {
  const RankInfo* r = row(table, v.rank);
  HangRank h;
  h.state = state;
  h.rank = v.rank;
  h.host = r ? r->host : "";
  h.gpu = gpu_number(r);
  h.last = v.known ? describe_op(v.hb) : "unknown";
  h.step = v.known && v.hb.has_event ? v.hb.event_step : -1;
  h.ago_s = v.known && v.hb.has_event ? static_cast<double>(v.hb.event_age_ms) / 1e3 : -1.0;
  h.silent_s = v.silent_ms >= 0 ? static_cast<double>(v.silent_ms) / 1e3 : -1.0;
  return h;
}

// Silent, behind and unseen ranks (and with `waiting`, those waiting), at most `per_state` of
// each, in that order.
std::vector<HangRank> collect(const JobView& view, const std::vector<RankInfo>& table,
                              size_t per_state, bool waiting) {
  std::vector<HangRank> out;
  auto add = [&](const char* state, const std::vector<int>& ranks) {
    for (size_t i = 0; i < ranks.size() && i < per_state; ++i) {
      out.push_back(hang_rank(state, view.ranks[static_cast<size_t>(ranks[i])], table));
    }
  };
  add("silent", view.silent);
  add("behind", view.behind);
  add("unseen", view.unseen);
  if (waiting) add("waiting", view.waiting);
  return out;
}

}  // namespace

nlohmann::ordered_json named_json(const JobView& view, const std::vector<RankInfo>& table) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const HangRank& h : collect(view, table, 64, /*waiting=*/false)) {
    nlohmann::ordered_json j;
    j["as"] = h.state;
    j["rank"] = h.rank;
    j["host"] = h.host;
    j["gpu"] = gpu_text(h.gpu);
    j["last"] = h.last;
    j["step"] = h.step;
    j["ago_s"] = h.ago_s;
    j["silent_s"] = h.silent_s;
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<HangRank> hang_ranks(const JobView& view, const std::vector<RankInfo>& table, size_t per_state) {
  return collect(view, table, per_state, /*waiting=*/true);
}

}  // namespace sp::rank_pipeline
