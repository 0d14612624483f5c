// A test tool, preloaded after libstraggler_probe.so into each rank of a real job
// (record_jobs.py): with SP_RECORD_DIR set, every step summary the runtime finishes is appended
// to $SP_RECORD_DIR/rank$RANK.spsum, encoded exactly as the transport sends it to rank 0
// (sp_set_summary_callback), as records [uint32 little-endian length][bytes], the format of
// STRAGGLER_PROBE_OUT_DIR's files. It registers itself when loaded: not a product library.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "straggler_probe/probe.h"

namespace {

std::mutex g_mutex;
std::FILE* g_file = nullptr;

void write_record(const void* data, size_t size, void*) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_file == nullptr) return;
  const auto n = static_cast<uint32_t>(size);
  const unsigned char len[4] = {static_cast<unsigned char>(n), static_cast<unsigned char>(n >> 8),
                                static_cast<unsigned char>(n >> 16), static_cast<unsigned char>(n >> 24)};
  std::fwrite(len, 1, 4, g_file);
  std::fwrite(data, 1, size, g_file);
}

void close_file() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_file != nullptr) std::fclose(g_file);
  g_file = nullptr;
}

__attribute__((constructor)) void start_recording() {
  const char* dir = std::getenv("SP_RECORD_DIR");
  const char* rank = std::getenv("RANK");
  if (dir == nullptr || rank == nullptr) return;
  g_file = std::fopen((std::string(dir) + "/rank" + rank + ".spsum").c_str(), "wb");
  if (g_file == nullptr) return;
  std::atexit(&close_file);
  sp_set_summary_callback(&write_record, nullptr);
}

}  // namespace
