#include "hang_metrics.h"

#include <algorithm>
#include <limits>
#include <string>

#include "hang/hang_line.h"
#include "straggler_probe/wire_io.h"

namespace sp::rank_pipeline::http {
namespace {

double seconds_between(OpenHang::Clock::time_point from, OpenHang::Clock::time_point to) {
  return std::max(0.0, std::chrono::duration<double>(to - from).count());
}

// An age the watch saw at its look, as of now (-1 stays: never).
double grown(double age_s, double since_look_s) { return age_s < 0 ? -1.0 : age_s + since_look_s; }

}  // namespace

void write_hang_families(Exposition* e, const HangBoard::Snapshot& hangs, OpenHang::Clock::time_point now,
                         const std::function<Labels(Labels)>& labels) {
  const OpenHang* open = hangs.open ? &*hangs.open : nullptr;
  e->family("straggler_probe_hang_suspected", MetricType::kGauge,
            "1 while rank 0 suspects a hang (an episode its hang line named is open), else 0.");
  e->sample(labels({}), open ? 1.0 : 0.0);
  e->family("straggler_probe_hang_episodes_total", MetricType::kCounter,
            "Hang episodes rank 0 named since the job started.");
  e->sample(labels({}), static_cast<double>(hangs.episodes));
  e->family("straggler_probe_hang_step", MetricType::kGauge,
            "The step the open hang episode is stuck in (absent: none open).");
  if (open) e->sample(labels({}), static_cast<double>(open->step));
  e->family("straggler_probe_hang_stalled_seconds", MetricType::kGauge,
            "How long no step has completed on every rank, in the open hang episode.");
  if (open) e->sample(labels({}), seconds_between(open->stalled_since, now));
  e->family("straggler_probe_hang_ranks", MetricType::kGauge,
            "Ranks of the open hang episode by state (silent, behind, unseen, waiting), all of them.");
  if (open) {
    e->sample(labels({{"state", "silent"}}), static_cast<double>(open->silent));
    e->sample(labels({{"state", "behind"}}), static_cast<double>(open->behind));
    e->sample(labels({{"state", "unseen"}}), static_cast<double>(open->unseen));
    e->sample(labels({{"state", "waiting"}}), static_cast<double>(open->waiting));
  }
  static const std::string kRankSecondsHelp =
      "Each rank the open hang episode names (silent, behind or unseen; the first " +
      std::to_string(kNamedPerKind) +
      " of each, as the hang line): seconds since its last op finished (NaN: none known).";
  e->family("straggler_probe_hang_rank_seconds", MetricType::kGauge, kRankSecondsHelp);
  if (!open) return;
  const double since_look = seconds_between(open->looked, now);
  for (const HangRank& r : open->ranks) {
    if (r.state == "waiting") continue;  // the many that wait are counted, not named
    Labels l{{"state", r.state}, {"rank", std::to_string(r.rank)}, {"host", r.host.empty() ? "unknown" : r.host}};
    if (r.gpu >= 0) l.push_back({"gpu", std::to_string(r.gpu)});
    const double age = grown(r.ago_s, since_look);
    e->sample(labels(std::move(l)), age < 0 ? std::numeric_limits<double>::quiet_NaN() : age);
  }
}

nlohmann::ordered_json hang_status(const HangBoard::Snapshot& hangs, OpenHang::Clock::time_point now,
                                   std::chrono::system_clock::time_point wall_now) {
  nlohmann::ordered_json j;
  j["open"] = nullptr;
  if (hangs.open) {
    const OpenHang& o = *hangs.open;
    const double stalled_s = seconds_between(o.stalled_since, now);
    const double since_look = seconds_between(o.looked, now);
    nlohmann::ordered_json open;
    open["id"] = o.id;
    open["step"] = o.step;
    open["since"] = std::chrono::duration<double>(wall_now.time_since_epoch()).count() - stalled_s;
    open["stalled_s"] = stalled_s;
    open["bound_s"] = o.bound_s;
    open["lines"] = o.lines;
    nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
    for (const HangRank& r : o.ranks) {
      // Host names and op names were checked where they came in; printable() all the same, as
      // everything from another process that this server echoes.
      ranks.push_back({{"state", r.state}, {"rank", r.rank}, {"host", runtime::wire::printable(r.host, 64)},
                       {"gpu", r.gpu}, {"last", runtime::wire::printable(r.last, 128)}, {"step", r.step},
                       {"ago_s", grown(r.ago_s, since_look)}, {"silent_s", grown(r.silent_s, since_look)}});
    }
    open["ranks"] = std::move(ranks);
    open["counts"] = {{"silent", o.silent}, {"behind", o.behind}, {"unseen", o.unseen}, {"waiting", o.waiting}};
    open["left_out"] = o.silent + o.behind + o.unseen + o.waiting - o.ranks.size();
    j["open"] = std::move(open);
  }
  j["episodes_total"] = hangs.episodes;
  return j;
}

}  // namespace sp::rank_pipeline::http
