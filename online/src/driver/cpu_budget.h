// The analysis's CPU budget (OnlineConfig::cpu_budget): a credit of CPU seconds that refills at
// `share` of wall time, capped at `burst_s` of wall time's worth; analysing a step spends its CPU
// time. A step may be analysed while the credit is not negative, so over any stretch of time the
// analysis uses at most share x that time, plus one step and the burst.
#pragma once

#include <cstdint>

namespace sp::online {

class CpuBudget {
 public:
  CpuBudget(double share, double burst_s) : share_(share), cap_(share * burst_s), credit_(cap_) {}
  bool limited() const { return share_ > 0; }
  // Refills for the wall time since the last call; whether a step may be analysed now.
  bool allow(int64_t now_ns);
  void spend(double cpu_s) { credit_ -= cpu_s; }
  double share() const { return share_; }

 private:
  double share_, cap_, credit_;
  int64_t last_ns_ = -1;
};

}  // namespace sp::online
