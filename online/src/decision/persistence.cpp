#include "persistence.h"

#include <algorithm>
#include <cmath>

namespace sp::online {
namespace {

// Sign-test tails by (wins, pairs), computed once each per call: at thousands of units the
// pairwise counts take few distinct values.
class SignTails {
 public:
  explicit SignTails(int n) : n_(n), memo_(static_cast<size_t>((n + 1) * (n + 1)), -1.0) {}
  double p(int k, int n) {
    if (n < 0 || n > n_ || k < 0 || k > n) return sign_test_p(k, n);
    double& m = memo_[static_cast<size_t>(n * (n_ + 1) + k)];
    if (m < 0) m = sign_test_p(k, n);
    return m;
  }

 private:
  int n_;
  std::vector<double> memo_;
};

}  // namespace

double sign_test_p(int k, int n) {
  if (k <= 0) return 1.0;
  if (k > n) return 0.0;
  // The terms C(n, i) 2^-n for i = k..n, each from the last by the ratio (n - i) / (i + 1).
  double log_term = std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) - n * std::log(2.0);
  double sum = 0;
  for (int i = k; i <= n; ++i) {
    sum += std::exp(log_term);
    if (i < n) log_term += std::log(static_cast<double>(n - i)) - std::log(static_cast<double>(i + 1));
  }
  return std::min(1.0, sum);
}

Persistence persistence(const UnitFamily& f, int window, int unit) {
  Persistence out;
  const auto& h = f.history();
  if (h.empty()) return out;
  const size_t units = h.back().size();
  const size_t steps = std::min(h.size(), static_cast<size_t>(std::max(1, window)));
  const size_t first = h.size() - steps;
  out.steps = static_cast<int>(steps);
  if (units < 2 || (unit >= 0 && static_cast<size_t>(unit) >= units)) return out;
  std::vector<double> offset(units);
  for (size_t u = 0; u < units; ++u) offset[u] = f.offset(u);
  auto score = [&](size_t i, size_t u) { return static_cast<double>(h[i][u]) - offset[u]; };
  const double tie = f.floor();

  // Who led each step: the latest unit, when it is later than the next by more than a tie.
  std::vector<int> leads(units, 0);
  for (size_t i = first; i < h.size(); ++i) {
    if (h[i].size() != units) continue;
    size_t top = 0;
    double best = score(i, 0), second = -INFINITY;
    for (size_t u = 1; u < units; ++u) {
      const double x = score(i, u);
      if (x > best) {
        second = best;
        best = x;
        top = u;
      } else {
        second = std::max(second, x);
      }
    }
    if (best - second > tie) ++leads[top];
  }
  size_t u = unit >= 0 ? static_cast<size_t>(unit) : static_cast<size_t>(std::max_element(leads.begin(), leads.end()) - leads.begin());
  if (unit < 0 && leads[u] == 0) return out;
  out.unit = static_cast<int>(u);
  out.led = leads[u];
  for (size_t v = 0; v < units; ++v) {
    if (v != u && (out.rival < 0 || leads[v] > out.rival_led)) {
      out.rival = static_cast<int>(v);
      out.rival_led = leads[v];
    }
  }
  SignTails tails(static_cast<int>(steps));
  const double p_lead = tails.p(out.led, out.led + out.rival_led);

  // Ahead of each other unit: the rival with the largest sign-test p binds.
  double p_ahead = 0;
  for (size_t v = 0; v < units; ++v) {
    if (v == u) continue;
    int wins = 0, pairs = 0;
    for (size_t i = first; i < h.size(); ++i) {
      if (h[i].size() != units) continue;
      const double d = score(i, u) - score(i, v);
      wins += d > tie;
      pairs += std::fabs(d) > tie;
    }
    const double p = tails.p(wins, pairs);
    if (p >= p_ahead) {
      p_ahead = p;
      out.ahead = wins;
      out.ahead_of = pairs;
    }
  }
  out.p = std::min(1.0, static_cast<double>(units) * std::max(p_lead, p_ahead));
  return out;
}

void WorkHistory::add(const std::vector<double>& cpu, double ideal_s) {
  const size_t n = cpu.size();
  if (n < 2 || !(ideal_s > 0)) return;
  for (double c : cpu) {
    if (!(c > 0)) return;
  }
  if (!steps_.empty() && steps_.back().excess.size() != n) steps_.clear();
  if (tail_.units() != static_cast<int>(n)) tail_ = RankSumTail(static_cast<int>(n), window_);
  // One sort gives both each unit's rank (its level) and the values in order.
  order_.resize(n);
  for (size_t u = 0; u < n; ++u) order_[u] = u;
  std::stable_sort(order_.begin(), order_.end(), [&cpu](size_t a, size_t b) { return cpu[a] < cpu[b]; });
  const auto sorted = [&](size_t r) { return cpu[order_[r]]; };
  // The upper median of the others: index j = (n - 1) / 2 of the n - 1 others, which is the
  // sorted values' j when the unit itself sits above j, else their j + 1.
  const size_t j = (n - 1) / 2;
  Step step{std::vector<float>(n), std::vector<float>(n), std::vector<uint8_t>(n)};
  for (size_t u = 0; u < n; ++u) {
    const double peers = cpu[u] > sorted(j) ? sorted(j) : sorted(j + 1);
    step.excess[u] = static_cast<float>((cpu[u] - peers) / ideal_s);
    step.share[u] = static_cast<float>(cpu[u] / ideal_s);
  }
  for (size_t r = 0; r < n; ++r) step.level[order_[r]] = static_cast<uint8_t>(tail_.level(static_cast<int>(r)));
  steps_.push_back(std::move(step));
  while (steps_.size() > static_cast<size_t>(window_)) steps_.pop_front();
}

namespace {
double median_of(std::vector<double>* v) {
  std::nth_element(v->begin(), v->begin() + static_cast<long>(v->size() / 2), v->end());
  return (*v)[v->size() / 2];
}
}  // namespace

WorkHistory::Lead WorkHistory::lead(int k, int excluded) const {
  Lead out;
  if (steps_.empty()) return out;
  const size_t n = steps_.back().excess.size();
  const size_t steps = k <= 0 ? steps_.size() : std::min(steps_.size(), static_cast<size_t>(k));
  const size_t first = steps_.size() - steps;
  std::vector<int> sums(n, 0);
  for (size_t i = first; i < steps_.size(); ++i) {
    for (size_t u = 0; u < n; ++u) sums[u] += steps_[i].level[u];
  }
  size_t tested = 0;
  for (size_t u = 0; u < n; ++u) {
    if (static_cast<int>(u) == excluded) continue;
    ++tested;
    if (out.unit < 0 || sums[u] > out.rank_sum) {
      out.unit = static_cast<int>(u);
      out.rank_sum = sums[u];
    }
  }
  if (out.unit < 0) return out;
  const auto unit = static_cast<size_t>(out.unit);
  // Its lead over the other tested units (persistence.h); with no other tested unit (two
  // units, one excluded), over the excluded one.
  const bool others_tested = tested > 1;
  std::vector<double> excess, lead;
  for (size_t i = first; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    float top = -INFINITY;
    for (size_t v = 0; v < n; ++v) {
      if (v != unit && (static_cast<int>(v) != excluded || !others_tested)) top = std::max(top, s.share[v]);
    }
    excess.push_back(s.excess[unit]);
    lead.push_back(s.share[unit] - top);
    out.above += s.excess[unit] > 0;
    out.most += s.share[unit] > top;
  }
  out.median_excess = median_of(&excess);
  out.median_lead = median_of(&lead);
  out.steps = static_cast<int>(steps);
  out.p = std::min(1.0, static_cast<double>(tested) * tail_.p(out.rank_sum, out.steps));
  return out;
}

}  // namespace sp::online
