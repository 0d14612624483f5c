#include "recap_text.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "ledger.h"
#include "straggler_probe/whatif/number_text.h"

namespace sp::online {
namespace {

using whatif::fixed;

std::string pad_left(std::string s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string pad_right(std::string s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

}  // namespace

WorkerGrid mean_worker_grid(const std::deque<StepVerdict>& verdicts) {
  WorkerGrid g;
  for (const StepVerdict& v : verdicts) {
    if (!v.analyzed) continue;
    g.dp_size = std::max(g.dp_size, v.dp_size);
    g.pp_size = std::max(g.pp_size, v.pp_size);
  }
  const size_t cells = static_cast<size_t>(g.dp_size) * static_cast<size_t>(g.pp_size);
  std::vector<double> sum(cells, 0.0), n(cells, 0.0);
  for (const StepVerdict& v : verdicts) {
    if (!v.analyzed) continue;
    ++g.steps;
    for (size_t r = 0; r < v.worker_S.size(); ++r) {
      const size_t c = static_cast<size_t>(v.rank_stage[r]) * static_cast<size_t>(g.dp_size) +
                       static_cast<size_t>(v.rank_dp[r]);
      sum[c] += v.worker_S[r];
      n[c] += 1;
    }
  }
  g.mean.assign(cells, std::numeric_limits<double>::quiet_NaN());
  for (size_t c = 0; c < cells; ++c) {
    if (n[c] > 0) g.mean[c] = sum[c] / n[c];
  }
  return g;
}

std::string format_recap(const std::deque<StepVerdict>& recent, uint64_t skipped_total) {
  std::map<std::string, int> causes;
  double s_sum = 0;
  int analyzed = 0, skipped = 0;
  int64_t first = 0, last = 0;
  for (const StepVerdict& v : recent) {
    if (analyzed + skipped == 0) first = v.step;
    last = v.step;
    if (!v.analyzed) {
      ++skipped;
      continue;
    }
    ++analyzed;
    s_sum += v.S;
    ++causes[std::string(cause_name(v.cause))];
  }
  std::string out = "straggler_probe recap steps=" + std::to_string(first) + "-" +
                    std::to_string(last) + " analyzed=" + std::to_string(analyzed) +
                    " skipped=" + std::to_string(skipped) +
                    " skipped_total=" + std::to_string(skipped_total);
  if (analyzed > 0) out += " mean_S=" + fixed(s_sum / analyzed, 2);
  out += " causes:";
  for (const auto& [c, n] : causes) out += " " + c + "=" + std::to_string(n);
  Ledger ledger;  // what these steps lost and to whom
  for (const StepVerdict& v : recent) ledger.add(v);
  if (ledger.steps() > 0) {
    out += '\n';
    out += ledger.text();
  }
  const WorkerGrid g = mean_worker_grid(recent);
  if (g.steps == 0) return out + "\n";
  out += "\nmean S_w per worker (rows: pipeline stage, columns: dp rank; * = worst)\n";
  const auto worst = std::max_element(g.mean.begin(), g.mean.end(), [](double a, double b) {
    return std::isnan(a) || (!std::isnan(b) && a < b);
  });
  out += "        ";
  for (int d = 0; d < g.dp_size; ++d) out += pad_left("dp" + std::to_string(d), 6);
  out += "\n";
  for (int p = 0; p < g.pp_size; ++p) {
    out += pad_right("stage" + std::to_string(p), 8);
    for (int d = 0; d < g.dp_size; ++d) {
      const size_t c = static_cast<size_t>(p * g.dp_size + d);
      const double v = g.mean[c];
      std::string cell = pad_left(std::isnan(v) ? "-" : fixed(v, 2), 5);
      cell += (g.mean.begin() + static_cast<std::ptrdiff_t>(c) == worst) ? "*" : " ";
      out += cell;
    }
    out += "\n";
  }
  return out;
}

}  // namespace sp::online
