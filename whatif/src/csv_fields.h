// Exact parsing of single CSV/YAML fields, and quoting of bad values for error messages.
// Internal to the loaders.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sp::whatif::detail {

// A whole-field decimal integer ("-1", "42"); no sign '+', spaces, or fraction. A hand loop
// because trace integers are short and from_chars' generality shows up in load time; up to 18
// digits cannot overflow int64, longer fields are refused (no real rank or step is that long).
inline std::optional<int64_t> parse_int64(std::string_view s) {
  size_t i = 0;
  const bool negative = !s.empty() && s[0] == '-';
  if (negative) i = 1;
  if (i == s.size() || s.size() - i > 18) return std::nullopt;
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    const unsigned d = static_cast<unsigned char>(s[i]) - unsigned{'0'};
    if (d > 9) return std::nullopt;
    v = v * 10 + d;
  }
  return negative ? -v : v;
}

// A whole-field decimal or scientific number, correctly rounded (std::from_chars), so a
// float32 printed with 17 significant digits comes back bit for bit. "nan"/"inf" parse here;
// the caller rejects them with their own message.
inline std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// 'value' for messages: at most 40 characters, control characters escaped, so that an error
// stays one readable line whatever garbage the input holds.
std::string quote_value(std::string_view s);

// Shortest text that reads back as the same double (for echoing numbers in messages).
std::string format_number(double v);

}  // namespace sp::whatif::detail
