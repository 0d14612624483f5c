// The job's c10d::Store as an sp_kv_store (rank_pipeline/include/straggler_probe/rank_pipeline/kv_store.h), for the transport's
// C++ threads: the core of straggler_probe._c10d, and what bench/scale drives a real TCPStore
// with. Built against the installed torch (python/cmake/torch_bridge.cmake), with its C++ ABI.
#pragma once

#include <cstddef>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "straggler_probe/rank_pipeline/kv_store.h"
#include "tcp_kv_store.h"

namespace sp::pyext {

// The sp_kv_store holds a reference to the store; its destroy() drops it.
sp_kv_store* make_c10d_kv_store(c10::intrusive_ptr<c10d::Store> store);

}  // namespace sp::pyext
