// CLI11 validators built from the settings table's bounds (online/.../setting_defaults.h:
// kXLowest, kXAbove / kXBelow, generated from python/straggler_probe/_settings_table.py), so that
// analyze-dir refuses a value exactly when STRAGGLER_PROBE_<X> would, in the table's words. The
// refused text is not echoed (a command line is input like any other).
#pragma once

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <type_traits>

#include <CLI/CLI.hpp>

namespace sp::cli {

namespace detail {
// The whole of `text` as a number of type T (no sign games, no trailing bytes).
template <class T>
bool parse_whole(const std::string& text, T* value) {
  if constexpr (std::is_integral_v<T>) {
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, *value);
    return ec == std::errc() && ptr == end;
  } else {
    char* end = nullptr;
    *value = std::strtod(text.c_str(), &end);
    return !text.empty() && end == text.c_str() + text.size() && std::isfinite(*value);
  }
}

inline std::string number_text(double v) {
  std::string s = std::to_string(v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}
}  // namespace detail

// Accepts a T >= lowest: "expected an integer >= 2", as the table's _parse_int says it.
template <class T>
CLI::Validator at_least(T lowest) {
  const std::string what = std::string(std::is_integral_v<T> ? "expected an integer >= " : "expected a number >= ") +
                           detail::number_text(static_cast<double>(lowest));
  return CLI::Validator(
      [lowest, what](std::string& text) -> std::string {
        T value{};
        return detail::parse_whole(text, &value) && value >= lowest ? std::string() : what;
      },
      "");
}

// Accepts above < x < below: the table's probabilities.
inline CLI::Validator strictly_between(double above, double below) {
  const std::string what = "expected a probability strictly between " + detail::number_text(above) + " and " +
                           detail::number_text(below);
  return CLI::Validator(
      [above, below, what](std::string& text) -> std::string {
        double value = 0;
        return detail::parse_whole(text, &value) && value > above && value < below ? std::string() : what;
      },
      "");
}

}  // namespace sp::cli
