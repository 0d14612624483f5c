// meta.yaml: the artifact's flat "key: value" job description. A full YAML library would
// accept far more than this format (nesting, anchors, type guessing) and report problems less
// precisely, so a strict parser of exactly this subset is both smaller and clearer.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "csv_fields.h"
#include "straggler_probe/whatif/trace_loader.h"

namespace sp::whatif {
namespace {

enum Key : int { kTrialName, kRunId, kDpSize, kPpSize, kTpSize, kDspSize, kVppSize, kWorldSize, kNumKeys };
constexpr std::array<std::string_view, kNumKeys> kKeyNames = {
    "trial_name", "run_id", "dp_size", "pp_size", "tp_size", "dsp_size", "vpp_size", "world_size"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Drops a trailing " # comment" (YAML needs whitespace before '#', so "a#b" stays a value).
std::string_view strip_comment(std::string_view s) {
  for (size_t i = 1; i < s.size(); ++i) {
    if (s[i] == '#' && (s[i - 1] == ' ' || s[i - 1] == '\t')) return s.substr(0, i);
  }
  return s;
}

struct Entry {
  std::string_view value;
  size_t line = 0;
};

std::string key_error(Key k, const std::string& what) {
  return "key '" + std::string(kKeyNames[static_cast<size_t>(k)]) + "': " + what;
}

}  // namespace

JobMeta parse_meta(std::string_view text, const std::string& file) {
  std::array<Entry, kNumKeys> entries{};
  detail::LineReader lines(text);
  bool any_line = false;
  for (std::string_view raw; lines.next(raw);) {
    const size_t line_no = lines.number();
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    any_line = true;
    if (raw.front() == ' ' || raw.front() == '\t') {
      throw TraceError(file, line_no, "", "indented line: only flat 'key: value' lines are supported");
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) throw TraceError(file, line_no, "", "expected 'key: value'");
    const std::string_view key = trim(line.substr(0, colon));
    const std::string_view value = trim(strip_comment(line.substr(colon + 1)));
    size_t k = 0;
    while (k < kKeyNames.size() && kKeyNames[k] != key) ++k;
    if (k == kKeyNames.size()) {
      throw TraceError(file, line_no, "",
                       "unknown key " + detail::quote_value(key) + " (expected " + detail::join(kKeyNames, ", ") + ")");
    }
    if (entries[k].line != 0) {
      throw TraceError(file, line_no, "",
                       key_error(static_cast<Key>(k), "repeated (first on line " + std::to_string(entries[k].line) + ")"));
    }
    if (value.empty()) throw TraceError(file, line_no, "", key_error(static_cast<Key>(k), "empty value"));
    entries[k] = {value, line_no};
  }
  if (!any_line) throw TraceError(file, 0, "", "empty file (expected 'key: value' lines)");
  for (int k = 0; k < kNumKeys; ++k) {
    if (k != kRunId && entries[static_cast<size_t>(k)].line == 0) {
      throw TraceError(file, 0, "", key_error(static_cast<Key>(k), "missing"));
    }
  }

  JobMeta meta;
  std::string_view name = entries[kTrialName].value;
  if (name.size() >= 2 && (name.front() == '"' || name.front() == '\'') && name.back() == name.front()) {
    name = name.substr(1, name.size() - 2);
  }
  if (name.empty()) throw TraceError(file, entries[kTrialName].line, "", key_error(kTrialName, "empty value"));
  meta.trial_name = std::string(name);

  auto integer = [&](Key k, int64_t min_value) -> std::optional<int64_t> {
    const Entry& e = entries[static_cast<size_t>(k)];
    if (e.line == 0) return std::nullopt;
    const auto v = detail::parse_int64(e.value);
    if (!v) throw TraceError(file, e.line, "", key_error(k, "not an integer: " + detail::quote_value(e.value)));
    if (*v < min_value) {
      throw TraceError(file, e.line, "",
                       key_error(k, std::to_string(*v) + (min_value > 0 ? " is not positive" : " is negative")));
    }
    if (k != kRunId && *v > INT32_MAX) throw TraceError(file, e.line, "", key_error(k, std::to_string(*v) + " is too large"));
    return v;
  };
  meta.run_id = integer(kRunId, 0).value_or(0);
  meta.dp_size = static_cast<int>(*integer(kDpSize, 1));
  meta.pp_size = static_cast<int>(*integer(kPpSize, 1));
  meta.tp_size = static_cast<int>(*integer(kTpSize, 1));
  meta.dsp_size = static_cast<int>(*integer(kDspSize, 1));
  meta.vpp_size = static_cast<int>(*integer(kVppSize, 1));
  meta.world_size = static_cast<int>(*integer(kWorldSize, 1));

  // Each factor is below 2^31, so capping after every multiplication keeps this in int64.
  int64_t product = 1;
  for (const int f : {meta.dp_size, meta.pp_size, meta.tp_size, meta.dsp_size}) {
    product = std::min<int64_t>(product * f, int64_t{1} << 40);
  }
  if (product != meta.world_size) {
    throw TraceError(file, entries[kWorldSize].line, "",
                     key_error(kWorldSize, std::to_string(meta.world_size) +
                                               " != dp_size * pp_size * tp_size * dsp_size = " +
                                               std::to_string(meta.dp_size) + " * " + std::to_string(meta.pp_size) +
                                               " * " + std::to_string(meta.tp_size) + " * " +
                                               std::to_string(meta.dsp_size) + " = " + std::to_string(product)));
  }
  return meta;
}

JobMeta load_meta(const std::string& path) { return parse_meta(read_file_maybe_gzip(path), path); }

}  // namespace sp::whatif
