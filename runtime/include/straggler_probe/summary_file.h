// The per-rank summary file (<dir>/rank<R>.spsum): what a rank without the Python package writes
// under LD_PRELOAD with STRAGGLER_PROBE_OUT_DIR (preload/src/summary_file_writer.cpp)
// and `straggler-probe analyze-dir` reads (cli/analyze_dir/summary_dir_reader.cpp). One unit for the framing
// both sides use, beside the summary codec (step_summary.h) that encodes each record's payload:
//
//   file   := record*
//   record := [uint32 little-endian length][length bytes: one encoded StepSummary]
//
// Records are appended whole; a file that ends inside its last record was cut short (its rank
// stopped while writing).
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace sp::runtime::summary_file {

inline constexpr std::string_view kFilePrefix = "rank";
inline constexpr std::string_view kFileSuffix = ".spsum";
inline constexpr size_t kLengthBytes = 4;
// The summary's own header (step_summary.h codec): no record is shorter.
inline constexpr uint32_t kMinRecordBytes = 16;
// Far above any summary the runtime writes (its per-step event cap times the event size, plus
// names): a longer length is corruption, not a record the rank did not finish writing.
inline constexpr uint32_t kMaxRecordBytes = 256u << 20;

// "rank<R>.spsum".
std::string file_name(int32_t rank);
// "rank12.spsum" -> 12; nullopt for any other name.
std::optional<int32_t> rank_of_file_name(std::string_view name);

std::array<uint8_t, kLengthBytes> encode_length(uint32_t length);
uint32_t decode_length(const std::array<uint8_t, kLengthBytes>& prefix);
// Why `length` cannot be a record's ("" when it can), one phrase for the reader's error line.
std::string length_problem(uint32_t length);

// Appends one record (length prefix, then the bytes) and flushes; false on a write error or a
// payload that no reader would accept.
bool append_record(std::FILE* file, const void* data, size_t size);

}  // namespace sp::runtime::summary_file
