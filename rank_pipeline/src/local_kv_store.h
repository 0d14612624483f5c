// An in-process store for a single-rank job (no torch.distributed needed): same protocol, no
// network.
#pragma once

#include "kv_store.h"

namespace sp::rank_pipeline {

sp_kv_store* make_local_kv_store();

}  // namespace sp::rank_pipeline
