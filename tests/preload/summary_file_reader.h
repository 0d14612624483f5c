// Reads a per-rank summary file (<STRAGGLER_PROBE_OUT_DIR>/rank<R>.spsum, written by
// preload/src/summary_file_writer.cpp), framed as straggler_probe/summary_file.h says. Every record must decode and the file must end on a record boundary (gtest
// expectations); a missing file reads as no summaries. Shared by the preload tests, with the
// file reading under it.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "straggler_probe/step_summary.h"
#include "straggler_probe/summary_file.h"

namespace sp::runtime::testing {

// A whole file's bytes (empty when it cannot be read).
inline std::string slurp(const std::string& path) {
  std::string bytes;
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) bytes.append(buf, n);
    std::fclose(f);
  }
  return bytes;
}

inline std::vector<StepSummary> read_summary_file(const std::string& path) {
  const std::string bytes = slurp(path);
  std::vector<StepSummary> out;
  size_t pos = 0;
  while (pos + summary_file::kLengthBytes <= bytes.size()) {
    std::array<uint8_t, summary_file::kLengthBytes> prefix{};
    for (size_t i = 0; i < prefix.size(); ++i) prefix[i] = static_cast<uint8_t>(bytes[pos + i]);
    const uint32_t len = summary_file::decode_length(prefix);
    pos += summary_file::kLengthBytes;
    if (pos + len > bytes.size()) break;
    StepSummary s;
    std::string error;
    EXPECT_TRUE(decode_summary(std::string_view(bytes).substr(pos, len), &s, &error))
        << error;
    out.push_back(std::move(s));
    pos += len;
  }
  EXPECT_EQ(pos, bytes.size()) << "no trailing partial record";
  return out;
}

}  // namespace sp::runtime::testing
