// The one printer of whole lines (straggler_probe/output_line.h). Plain stdio, no spdlog, so that
// the offline CLI, which has spdlog of its own, prints through it too.
#include "straggler_probe/output_line.h"

#include <cstdio>
#include <string>

namespace sp::runtime {
namespace {

void write_line(std::FILE* stream, std::string_view line) {
  std::lock_guard lock(output_lock());
  std::fwrite(line.data(), 1, line.size(), stream);
  if (line.empty() || line.back() != '\n') std::fputc('\n', stream);
  std::fflush(stream);
}

}  // namespace

std::mutex& output_lock() {
  static std::mutex* const lock = new std::mutex();
  return *lock;
}

void print_line(std::string_view line) { write_line(stdout, line); }

void print_stderr_line(std::string_view line) { write_line(stderr, line); }

void print_warning_line(std::string_view message) {
  std::string line(kWarningLinePrefix);
  line += message;
  write_line(stderr, line);
}

}  // namespace sp::runtime
