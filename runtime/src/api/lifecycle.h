// Session control behind sp_init / sp_shutdown / sp_get_stats (see lifecycle.cpp).
#pragma once

#include <chrono>

#include "straggler_probe/probe.h"

namespace sp::runtime {

int init_probe(const sp_config* cfg);
// Stops recording and the consumer (its final pass queues every marked step); waits up to
// `timeout` for the consumer.
int shutdown_probe(std::chrono::milliseconds timeout);
int collect_stats(sp_stats* out);

}  // namespace sp::runtime
