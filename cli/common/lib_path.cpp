#include "lib_path.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace sp::cli {
namespace {

std::string exe_dir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? std::string(".") : p.substr(0, slash);
}

std::string absolute(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) != nullptr ? std::string(buf) : p;
}

}  // namespace

int print_lib_path() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("STRAGGLER_PROBE_LIB"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  }
  const std::string dir = exe_dir();
  candidates.push_back(dir + "/../lib/libstraggler_probe.so");     // installed: bin/ and lib/
  candidates.push_back(dir + "/../lib64/libstraggler_probe.so");
  candidates.push_back(dir + "/../runtime/libstraggler_probe.so");  // build tree: cli/ and runtime/
#ifdef SP_BUILD_PROBE_LIB
  candidates.emplace_back(SP_BUILD_PROBE_LIB);
#endif
  for (const std::string& c : candidates) {
    if (access(c.c_str(), R_OK) == 0) {
      std::printf("%s\n", absolute(c).c_str());
      return 0;
    }
  }
  std::string tried;
  for (const std::string& c : candidates) tried += "\n  " + c;
  std::fprintf(stderr, "straggler-probe: error: libstraggler_probe.so not found; looked at:%s\n",
               tried.c_str());
  return 1;
}

}  // namespace sp::cli
