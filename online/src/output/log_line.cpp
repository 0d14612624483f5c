// The per-step log line (format_log_line and format_skipped_line, declared in log_line.h):
// key=value pairs, the evidence and skip reasons quoted.
#include <cstdio>
#include <string>

#include "straggler_probe/online/log_line.h"
#include "straggler_probe/whatif/number_text.h"

namespace sp::online {
namespace {

using whatif::fixed;

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

std::string format_skipped_line(int64_t first, int64_t last, const std::string& reason) {
  std::string line = "straggler_probe step=" + std::to_string(first);
  if (last != first) {
    line += '-';
    line += std::to_string(last);
  }
  return line + " skipped reason=" + quoted(reason);
}

std::string format_log_line(const StepVerdict& v) {
  if (!v.analyzed) return format_skipped_line(v.step, v.step, v.skip_reason);
  std::string line = "straggler_probe step=" + std::to_string(v.step);
  line += " time=" + fixed(v.time_s, 3) + "s";
  line += " ideal=" + fixed(v.ideal_s, 3) + "s";
  line += " S=" + fixed(v.S, 2);
  line += " cause=" + std::string(cause_name(v.cause));
  line += " worst=" + (v.worst.empty() ? std::string("-") : v.worst.text());
  if (!v.worst_host.empty()) line += " host=" + v.worst_host;
  if (v.worst_device >= 0) line += " gpu=" + std::to_string(v.worst_device);
  line += " S_w=" + fixed(v.worst_S, 2);
  line += " top_op=" + (v.top_op.empty() ? std::string("-") : v.top_op);
  // Untraced CPU time; `host=` is the worst rank's host.
  line += " cpu_gaps=" + fixed(100.0 * v.launch_share, 1) + "%";
  if (v.null_ready) {
    // jitter: the part of S - 1 that the null explains, in % of the ideal step; p: the
    // verdict's p-value against the null (the named cause's test; for none, the step's S).
    line += " jitter=" + fixed(100.0 * v.jitter, 1) + "%";
    char p[32];
    std::snprintf(p, sizeof p, " p=%.2g", v.p);
    line += p;
    // The window's persistence test named it: the unit led k of the last n steps.
    if (v.named_by == "persistence") {
      line += " persist=" + std::to_string(v.persist.led) + "/" + std::to_string(v.persist.of);
    }
    // The CPU work test named it: more CPU work than its peers on k of the last n steps.
    if (v.named_by == "cpu-work") {
      line += " cpu_work=" + std::to_string(v.cpu_work.above) + "/" + std::to_string(v.cpu_work.of);
    }
  }
  line += " evidence=" + quoted(v.evidence);
  return line;
}

}  // namespace sp::online
