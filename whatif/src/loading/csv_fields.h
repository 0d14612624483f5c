// Lines and exact single fields of CSV/YAML text, and quoting of bad values for error messages.
// Internal to the loaders.
#pragma once

#include <array>
#include <charconv>
#include <cstring>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sp::whatif::detail {

// Splits text into lines one at a time; a final line without '\n' counts, a trailing '\n'
// does not start an extra line. A '\r' before '\n' is dropped (files written on Windows).
class LineReader {
 public:
  explicit LineReader(std::string_view text) : text_(text) {}
  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    const char* begin = text_.data() + pos_;
    const void* nl = std::memchr(begin, '\n', text_.size() - pos_);
    const size_t len = nl ? static_cast<size_t>(static_cast<const char*>(nl) - begin) : text_.size() - pos_;
    line = std::string_view(begin, len);
    pos_ += len + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++number_;
    return true;
  }
  size_t number() const { return number_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  size_t number_ = 0;
};

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

// "a<sep>b<sep>c": the names a message lists as expected.
template <size_t N>
std::string join(const std::array<std::string_view, N>& names, std::string_view sep) {
  std::string out;
  for (const std::string_view n : names) {
    if (!out.empty()) out += sep;
    out += n;
  }
  return out;
}

}  // namespace sp::whatif::detail
