// Child-process conversion of Parquet traces to CSV (see parquet_bridge.h for why).
#include "parquet_bridge.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/exit_codes.h"

extern char** environ;

namespace sp::cli {
namespace {

namespace fs = std::filesystem;

// The converter's exit codes (trace_io.py).
constexpr int kConverterBadInput = 2;
constexpr int kConverterNoPyarrow = 3;

bool is_executable(const std::string& p) { return !p.empty() && ::access(p.c_str(), X_OK) == 0; }

std::string find_python() {
  if (const char* p = std::getenv("STRAGGLER_PROBE_PYTHON"); p && *p) return p;
  if (const char* venv = std::getenv("VIRTUAL_ENV"); venv && *venv) {
    if (const std::string p = std::string(venv) + "/bin/python"; is_executable(p)) return p;
  }
#ifdef SP_SOURCE_VENV_PYTHON
  if (is_executable(SP_SOURCE_VENV_PYTHON)) return SP_SOURCE_VENV_PYTHON;
#endif
  return "python3";
}

// The converter script: installed next to the binary (share/straggler_probe), else the source
// tree's copy. Empty: fall back to `python -m straggler_probe.trace_io` (an installed package).
std::string find_converter_script() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share/straggler_probe/trace_io.py";
    if (fs::exists(installed, ec)) return installed.string();
  }
#ifdef SP_SOURCE_TRACE_IO
  if (fs::exists(SP_SOURCE_TRACE_IO, ec)) return SP_SOURCE_TRACE_IO;
#endif
  return "";
}

// Runs argv with stdout and stderr into log_path; returns the exit status, or -1 with errno
// set when the program could not be started.
int run_process(const std::vector<std::string>& argv, const std::string& log_path) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid failed: ") + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// The converter's output: "warning: ..." lines are forwarded; the last other line is the
// message explaining a failure.
std::string relay_log(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.rfind("warning: ", 0) == 0) {
      spdlog::warn("{}", line.substr(9));
    } else if (!line.empty()) {
      last = line;
    }
  }
  return last;
}

}  // namespace

bool is_parquet_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "PAR1", 4) == 0;
}

ConvertedTrace::ConvertedTrace(std::string dir) : dir_(std::move(dir)) {}
ConvertedTrace::ConvertedTrace(ConvertedTrace&& other) noexcept : dir_(std::move(other.dir_)) { other.dir_.clear(); }
ConvertedTrace::~ConvertedTrace() {
  if (dir_.empty()) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

ConvertedTrace convert_parquet_to_csv(const std::string& parquet_path) {
  std::string tmpl = (fs::temp_directory_path() / "straggler-probe-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) {
    throw std::runtime_error(std::string("cannot create a temporary directory: ") + std::strerror(errno));
  }
  ConvertedTrace out(tmpl);
  const std::string log = tmpl + "/converter.log";
  const std::string python = find_python();
  const std::string script = find_converter_script();
  std::vector<std::string> argv = {python};
  if (script.empty()) {
    argv.insert(argv.end(), {"-m", "straggler_probe.trace_io"});
  } else {
    argv.push_back(script);
  }
  argv.insert(argv.end(), {"to-csv", parquet_path, out.csv_path()});

  const int rc = run_process(argv, log);
  if (rc < 0) {
    throw std::runtime_error("reading Parquet needs Python 3 with pyarrow, but '" + python +
                             "' could not be started (" + std::strerror(errno) + "); set STRAGGLER_PROBE_PYTHON");
  }
  const std::string message = relay_log(log);
  if (rc == 0) return out;
  if (rc == kConverterBadInput) throw BadInput(message.empty() ? parquet_path + ": unreadable Parquet file" : message);
  if (rc == kConverterNoPyarrow) {
    throw std::runtime_error("reading Parquet needs pyarrow, which '" + python +
                             "' cannot import (pip install pyarrow, or set STRAGGLER_PROBE_PYTHON)");
  }
  throw std::runtime_error("Parquet conversion failed ('" + python + "' exited with " + std::to_string(rc) +
                           (message.empty() ? std::string(")") : "): " + message));
}

}  // namespace sp::cli
