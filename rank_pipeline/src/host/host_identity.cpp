#include "host_identity.h"

#include <unistd.h>

#include <array>
#include <climits>

#include "base/rank_row.h"

namespace sp::rank_pipeline {
namespace {

std::string network_namespace() {
  std::array<char, 128> link{};
  const ssize_t n = readlink("/proc/self/ns/net", link.data(), link.size() - 1);
  return n > 0 ? std::string(link.data(), static_cast<size_t>(n)) : std::string("net:?");
}

}  // namespace

HostIdentity this_host(const std::string& name_override) {
  std::string name = name_override;
  if (name.empty()) {
    std::array<char, HOST_NAME_MAX + 1> buf{};
    if (gethostname(buf.data(), buf.size() - 1) == 0) name = buf.data();
  }
  HostIdentity id;
  id.name = clean_host_name(name);
  // "net:[4026531840]": the namespace's inode, unique on the machine while it exists
  std::string ns = network_namespace();
  for (char& c : ns) {
    if (c == ':' || c == '[' || c == ']') c = '_';
  }
  id.key = id.name + "@" + ns;
  return id;
}

}  // namespace sp::rank_pipeline
