// Which host this rank runs on, as the transport groups ranks: the host name (or
// STRAGGLER_PROBE_HOSTNAME, an override for tests and for clusters whose host names say little)
// plus the network namespace, because the ranks of one host reach its leader over a Unix socket
// in the abstract namespace, which is per network namespace (two containers of one machine are
// two hosts to the transport).
#pragma once

#include <string>

namespace sp::rank_pipeline {

struct HostIdentity {
  std::string name;  // clean_host_name()'d: what verdicts print
  std::string key;   // name + network namespace: what ranks group by
};

// `name_override` (when not empty) replaces the system's host name.
HostIdentity this_host(const std::string& name_override);

}  // namespace sp::rank_pipeline
