// A TCPStore client as an sp_kv_store (bench/scale's store), declared without torch's headers:
// only C types cross (c10d_kv_store.cpp, built against torch, defines it).
#pragma once

#include <cstddef>

#include "straggler_probe/rank_pipeline/kv_store.h"

namespace sp::pyext {

// A client of the TCPStore at host:port (is_server: this one also serves it). null with *err.
sp_kv_store* connect_tcp_kv_store(const char* host, int port, bool is_server, int timeout_ms,
                                  char* err, size_t err_cap);

}  // namespace sp::pyext
