// Which protocol a rank speaks (transport.h), and the threads that speak it.
#include "transport.h"

#include "transport_loop.h"

namespace sp::rank_pipeline {

bool speaks_host_protocol(const TransportOptions& o, const KvClient& store) {
  switch (o.protocol) {
    case TransportProtocol::kHostAggregated: return true;
    case TransportProtocol::kPerRank: return false;
    case TransportProtocol::kAuto: break;
  }
  return store.has_append() && store.has_compare_set() && store.has_add();
}

TransportContext transport_context(const TransportOptions& options,
                                   std::shared_ptr<KvClient> store,
                                   std::shared_ptr<TransportCounters> counters,
                                   std::shared_ptr<StopRequest> stop,
                                   std::function<void(const std::string&)> on_remote_stop,
                                   std::function<void(const std::string&)> warn) {
  TransportContext c;
  c.o = options;
  if (!c.o.source) {
    c.o.source = runtime_summary_source(c.o.runtime);
    if (!c.o.heartbeat) c.o.heartbeat = runtime_heartbeat_source(c.o.runtime);
    if (!c.o.set_recording_paused && c.o.runtime.set_recording_paused != nullptr) {
      c.o.set_recording_paused = [set = c.o.runtime.set_recording_paused](bool paused) {
        set(paused ? 1 : 0);
      };
    }
  }
  c.store = std::move(store);
  c.counters = std::move(counters);
  c.stop = std::move(stop);
  c.on_remote_stop = std::move(on_remote_stop);
  c.warn = std::move(warn);
  c.watchdog = [] {};
  return c;
}

std::unique_ptr<TransportThread> start_sender(
    const TransportOptions& options, std::shared_ptr<KvClient> store,
    std::shared_ptr<TransportCounters> counters, std::shared_ptr<StopRequest> stop,
    std::function<void(const std::string&)> on_remote_stop,
    std::function<void(const std::string&)> warn) {
  const bool host = speaks_host_protocol(options, *store);
  TransportContext c = transport_context(options, std::move(store), std::move(counters), std::move(stop),
                                  std::move(on_remote_stop), std::move(warn));
  return host ? start_host_transport(std::move(c)) : start_per_rank_sender(std::move(c));
}

std::unique_ptr<TransportThread> start_collector(
    const TransportOptions& options, std::shared_ptr<KvClient> store,
    std::shared_ptr<TransportCounters> counters, std::function<void(StepBatch&&)> deliver,
    std::function<void()> watchdog, std::function<void(const std::string&)> warn,
    std::shared_ptr<StopRequest> stop, std::function<void(const std::string&)> on_remote_stop) {
  const bool host = speaks_host_protocol(options, *store);
  TransportContext c = transport_context(options, std::move(store), std::move(counters), std::move(stop),
                                  std::move(on_remote_stop), std::move(warn));
  c.deliver = std::move(deliver);
  c.watchdog = std::move(watchdog);
  return host ? start_host_transport(std::move(c)) : start_per_rank_collector(std::move(c));
}

}  // namespace sp::rank_pipeline
