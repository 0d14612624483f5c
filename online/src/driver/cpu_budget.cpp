#include "cpu_budget.h"

#include <algorithm>

namespace sp::online {

bool CpuBudget::allow(int64_t now_ns) {
  if (!limited()) return true;
  if (last_ns_ >= 0 && now_ns > last_ns_) {
    credit_ = std::min(cap_, credit_ + share_ * static_cast<double>(now_ns - last_ns_) * 1e-9);
  }
  last_ns_ = now_ns;
  return credit_ >= 0;
}

}  // namespace sp::online
