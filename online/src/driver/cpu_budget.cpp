#include "cpu_budget.h"

#include <time.h>

#include <algorithm>

namespace sp::online {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

bool CpuBudget::allow(int64_t now_ns) {
  if (!limited()) return true;
  if (last_ns_ >= 0 && now_ns > last_ns_) {
    credit_ = std::min(cap_, credit_ + share_ * static_cast<double>(now_ns - last_ns_) * 1e-9);
  }
  last_ns_ = now_ns;
  return credit_ >= 0;
}

}  // namespace sp::online
