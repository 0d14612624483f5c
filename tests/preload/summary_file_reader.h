// Reads a per-rank summary file (<STRAGGLER_PROBE_OUT_DIR>/rank<R>.spsum, written by
// nccl_hooks/src/summary_file_writer.cpp): records [uint32 little-endian length][encoded
// StepSummary]. Every record must decode and the file must end on a record boundary (gtest
// expectations); a missing file reads as no summaries. Shared by the preload tests, with the
// file reading under it.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "straggler_probe/step_summary.h"

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
  while (pos + 4 <= bytes.size()) {
    const auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(bytes[i])); };
    const uint32_t len = b(pos) | b(pos + 1) << 8 | b(pos + 2) << 16 | b(pos + 3) << 24;
    pos += 4;
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
