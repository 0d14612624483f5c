// Prometheus' text exposition format (version 0.0.4), written by hand: a few dozen lines, where
// the official C++ client (prometheus-cpp) would bring its own registry, locks and HTTP server
// into every training process. Families are written whole, each with its HELP and TYPE lines;
// label values are escaped (backslash, double quote, newline), so a host name or a target read
// from another process can never break a line or forge a sample.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sp::rank_pipeline::http {

using Labels = std::vector<std::pair<std::string, std::string>>;

enum class MetricType { kGauge, kCounter };

class Exposition {
 public:
  // Starts a family. `name` must match [a-zA-Z_:][a-zA-Z0-9_:]* (checked: a bad name is
  // dropped with its samples, never written); counters should end in _total.
  void family(std::string_view name, MetricType type, std::string_view help);
  // A sample of the current family. NaN and infinities are written as Prometheus spells them.
  void sample(const Labels& labels, double value);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::string name_;  // the current family; "" after a refused name
};

bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);
// A label value as it goes between double quotes.
std::string escape_label_value(std::string_view value);
// A sample value: shortest round-trip decimal, or NaN / +Inf / -Inf.
std::string format_value(double value);

}  // namespace sp::rank_pipeline::http
