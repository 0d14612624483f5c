#include "exposition.h"

#include <cctype>
#include <charconv>
#include <cmath>

namespace sp::rank_pipeline::http {
namespace {

bool name_char(char c, bool first, bool colon) {
  const auto u = static_cast<unsigned char>(c);
  if (std::isalpha(u) != 0 || c == '_' || (colon && c == ':')) return true;
  return !first && std::isdigit(u) != 0;
}

bool valid_name(std::string_view name, bool colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!name_char(name[i], i == 0, colon)) return false;
  }
  return true;
}

// HELP text escapes backslash and newline only.
std::string escape_help(std::string_view help) {
  std::string out;
  for (const char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

}  // namespace

bool valid_metric_name(std::string_view name) { return valid_name(name, true); }
bool valid_label_name(std::string_view name) {
  return valid_name(name, false) && name.rfind("__", 0) != 0;
}

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, ptr);
}

void Exposition::family(std::string_view name, MetricType type, std::string_view help) {
  name_.clear();
  if (!valid_metric_name(name)) return;
  name_ = std::string(name);
  text_ += "# HELP " + name_ + " " + escape_help(help) + "\n";
  text_ += "# TYPE " + name_ + (type == MetricType::kCounter ? " counter\n" : " gauge\n");
}

void Exposition::sample(const Labels& labels, double value) {
  if (name_.empty()) return;
  std::string line = name_;
  bool first = true;
  for (const auto& [key, v] : labels) {
    if (!valid_label_name(key)) continue;
    line += first ? "{" : ",";
    first = false;
    line += key + "=\"" + escape_label_value(v) + "\"";
  }
  if (!first) line += "}";
  text_ += line + " " + format_value(value) + "\n";
}

}  // namespace sp::rank_pipeline::http
