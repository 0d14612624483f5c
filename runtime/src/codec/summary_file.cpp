#include "straggler_probe/summary_file.h"

namespace sp::runtime::summary_file {

std::string file_name(int32_t rank) {
  return std::string(kFilePrefix) + std::to_string(rank) + std::string(kFileSuffix);
}

std::optional<int32_t> rank_of_file_name(std::string_view name) {
  if (name.size() <= kFilePrefix.size() + kFileSuffix.size() || !name.starts_with(kFilePrefix) ||
      !name.ends_with(kFileSuffix)) {
    return std::nullopt;
  }
  const std::string_view digits =
      name.substr(kFilePrefix.size(), name.size() - kFilePrefix.size() - kFileSuffix.size());
  if (digits.size() > 9) return std::nullopt;
  int32_t rank = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    rank = rank * 10 + (c - '0');
  }
  return rank;
}

std::array<uint8_t, kLengthBytes> encode_length(uint32_t length) {
  return {static_cast<uint8_t>(length), static_cast<uint8_t>(length >> 8),
          static_cast<uint8_t>(length >> 16), static_cast<uint8_t>(length >> 24)};
}

uint32_t decode_length(const std::array<uint8_t, kLengthBytes>& p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

std::string length_problem(uint32_t length) {
  if (length < kMinRecordBytes) {
    return "bad length " + std::to_string(length) + " (a step summary has at least " +
           std::to_string(kMinRecordBytes) + " bytes)";
  }
  if (length > kMaxRecordBytes) {
    return "bad length " + std::to_string(length) + " (more than " +
           std::to_string(kMaxRecordBytes >> 20) + " MiB)";
  }
  return {};
}

bool append_record(std::FILE* file, const void* data, size_t size) {
  if (file == nullptr || size > kMaxRecordBytes || size < kMinRecordBytes) return false;
  const auto prefix = encode_length(static_cast<uint32_t>(size));
  const bool ok = std::fwrite(prefix.data(), 1, prefix.size(), file) == prefix.size() &&
                  std::fwrite(data, 1, size, file) == size;
  return std::fflush(file) == 0 && ok;
}

}  // namespace sp::runtime::summary_file
