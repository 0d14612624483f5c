#include "hang_board.h"

#include <algorithm>

namespace sp::rank_pipeline {

void HangBoard::record(const HangEpisode& episode) {
  std::function<void()> notify;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find_if(episodes_.begin(), episodes_.end(),
                           [&](const HangEpisode& e) { return e.id == episode.id; });
    if (it != episodes_.end()) {
      *it = episode;
    } else {
      ++total_;
      episodes_.push_back(episode);
      while (episodes_.size() > kMaxEpisodes) episodes_.pop_front();
    }
    ++generation_;
    notify = on_record;
  }
  if (notify) notify();
}

void HangBoard::show_open(OpenHang open) {
  std::lock_guard<std::mutex> lock(mutex_);
  open_ = std::move(open);
  ++generation_;
}

void HangBoard::clear_open() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!open_) return;
  open_.reset();
  ++generation_;
}

HangBoard::Snapshot HangBoard::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return Snapshot{open_, total_};
}

uint64_t HangBoard::generation() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return generation_;
}

void HangBoard::set_settings(double after_s, double multiple) {
  std::lock_guard<std::mutex> lock(mutex_);
  after_s_ = after_s;
  multiple_ = multiple;
}

std::pair<uint64_t, std::vector<int>> HangBoard::latest_silent() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (episodes_.empty()) return {0, {}};
  const HangEpisode& e = episodes_.back();
  std::vector<int> ranks;
  if (e.named.is_array()) {
    for (const auto& j : e.named) {
      if (j.is_object() && j.value("as", "") == "silent" && j.contains("rank") && j["rank"].is_number_integer()) {
        ranks.push_back(j["rank"].get<int>());
      }
    }
  }
  return {e.id, ranks};
}

uint64_t HangBoard::episodes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return total_;
}

nlohmann::ordered_json HangBoard::section() const {
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::ordered_json out;
  out["after_s"] = after_s_;
  out["multiple"] = multiple_;
  out["episodes_total"] = total_;
  out["episodes_kept"] = episodes_.size();
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const HangEpisode& e : episodes_) {
    nlohmann::ordered_json j;
    j["id"] = e.id;
    j["step"] = e.step;
    j["bound_s"] = e.bound_s;
    j["detected_after_s"] = e.detected_after_s;
    j["duration_s"] = e.duration_s >= 0 ? nlohmann::ordered_json(e.duration_s) : nullptr;
    j["resumed"] = e.resumed;
    j["lines"] = e.lines;
    j["named"] = e.named.is_null() ? nlohmann::ordered_json::array() : e.named;
    j["waiting"] = e.waiting;
    j["first_line"] = e.first_line;
    j["last_line"] = e.last_line;
    list.push_back(std::move(j));
  }
  out["episodes"] = std::move(list);
  return out;
}

void HangBoard::notice(uint64_t episode) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (episode <= noticed_) return;
    noticed_ = episode;
  }
  cv_.notify_all();
}

uint64_t HangBoard::wait_notice(uint64_t seen, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return closed_ || noticed_ > seen; });
  return !closed_ && noticed_ > seen ? noticed_ : 0;
}

void HangBoard::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  cv_.notify_all();
}

}  // namespace sp::rank_pipeline
