// The --out directory of both subcommands: created if missing, or one BadInput line saying why not.
#pragma once

#include <filesystem>
#include <string>
#include <system_error>

#include "exit_codes.h"

namespace sp::cli {

inline void create_output_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw BadInput("--out: cannot create directory " + dir + (ec ? ": " + ec.message() : ""));
  }
}

}  // namespace sp::cli
