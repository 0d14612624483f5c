// An in-process store for a single-rank job (no torch.distributed needed): same protocol, no
// network. Tests also use it for many ranks in one process, and its basic flavour (no
// compare_set, no append: what a store without c10d's extended API offers) for the transport's
// fallback protocol.
#pragma once

#include <memory>

#include "straggler_probe/rank_pipeline/kv_store.h"

namespace sp::rank_pipeline {

enum class LocalKvApi { kFull, kBasic };

// The keys and values: one per simulated job, shared by its clients.
struct LocalKvData;
std::shared_ptr<LocalKvData> make_local_kv_data();
// How many keys the store holds now (what a bounded protocol keeps bounded).
size_t local_kv_size(const LocalKvData& data);

// A client of `data` (a fresh store when null); each client is its own sp_kv_store, so that
// each simulated rank counts its own operations.
sp_kv_store* make_local_kv_store(LocalKvApi api = LocalKvApi::kFull,
                                 std::shared_ptr<LocalKvData> data = nullptr);

}  // namespace sp::rank_pipeline
