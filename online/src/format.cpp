#include "format.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "straggler_probe/online/analyzer.h"
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

// key="value" with quotes and backslashes escaped, so a line always parses as key=value pairs.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return out + "\"";
}

}  // namespace

std::string_view cause_name(Cause c) {
  switch (c) {
    case Cause::kNone: return "none";
    case Cause::kWorker: return "worker";
    case Cause::kStageImbalance: return "stage-imbalance";
    case Cause::kSeqImbalance: return "seq-imbalance";
    case Cause::kGc: return "gc";
    case Cause::kComm: return "comm";
    case Cause::kHostDelay: return "host-delay";
  }
  return "none";
}

std::string format_log_line(const StepVerdict& v) {
  std::string line = "straggler_probe step=" + std::to_string(v.step);
  if (!v.analyzed) return line + " skipped reason=" + quoted(v.skip_reason);
  line += " time=" + fixed(v.time_s, 3) + "s";
  line += " ideal=" + fixed(v.ideal_s, 3) + "s";
  line += " S=" + fixed(v.S, 2);
  line += " cause=" + std::string(cause_name(v.cause));
  line += " worst=" + (v.worst.empty() ? std::string("-") : v.worst);
  if (!v.worst_host.empty()) line += " host=" + v.worst_host;
  if (v.worst_device >= 0) line += " gpu=" + std::to_string(v.worst_device);
  line += " S_w=" + fixed(v.worst_S, 2);
  line += " top_op=" + (v.top_op.empty() ? std::string("-") : v.top_op);
  line += " host=" + fixed(100.0 * v.launch_share, 1) + "%";
  line += " evidence=" + quoted(v.evidence);
  return line;
}

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

std::string format_summary(const std::deque<StepVerdict>& recent, uint64_t skipped_total) {
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
  std::string out = "straggler_probe summary steps=" + std::to_string(first) + "-" +
                    std::to_string(last) + " analyzed=" + std::to_string(analyzed) +
                    " skipped=" + std::to_string(skipped) +
                    " skipped_total=" + std::to_string(skipped_total);
  if (analyzed > 0) out += " mean_S=" + fixed(s_sum / analyzed, 2);
  out += " causes:";
  for (const auto& [c, n] : causes) out += " " + c + "=" + std::to_string(n);
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
