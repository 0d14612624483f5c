// Runs the real straggler-probe binary (SP_CLI_BINARY) in a given directory and captures its
// exit code, stdout and stderr: the CLI tests check what a user sees.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sp::cli::testing {

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string quoted(const std::string& s) {
  std::string q = "'";
  for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs the CLI in `cwd` (so messages carry short relative names).
inline CliRun run_cli(const std::string& args, const std::filesystem::path& cwd) {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / ("sp_cli_test_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  const std::string cmd = "cd " + quoted(cwd.string()) + " && " + quoted(SP_CLI_BINARY) + " " + args + " >" +
                          quoted((tmp / "stdout").string()) + " 2>" + quoted((tmp / "stderr").string());
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(tmp / "stdout");
  r.err = slurp(tmp / "stderr");
  fs::remove_all(tmp);
  return r;
}

}  // namespace sp::cli::testing
