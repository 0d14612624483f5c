// The fallback store: a torch.distributed Store (or anything with set/get/check/delete_key)
// driven through Python. The transport thread takes the GIL only for the call itself, and torch's
// store methods release it while they talk to the server, so the training thread barely waits.
#pragma once

#include <pybind11/pybind11.h>

#include "straggler_probe/rank_pipeline/kv_store.h"

namespace sp::pyext {

// New sp_kv_store owning a reference to `store`; destroy it through its vtable.
sp_kv_store* make_python_kv_store(pybind11::object store);

}  // namespace sp::pyext
