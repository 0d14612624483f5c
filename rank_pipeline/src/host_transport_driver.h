// Drives many ranks' HostTransports (host_transport.h) from one thread, as their own threads
// would: the ranks bench/scale and the tests simulate by the thousand (as many threads would
// swamp two cores). Not used by a training rank, whose transport has its own thread.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "host_transport.h"

namespace sp::rank_pipeline {

class HostTransportDriver {
 public:
  // Starts the thread: each transport's start() (its election), then passes until every one
  // has finished. The transports must outlive the driver.
  explicit HostTransportDriver(std::vector<HostTransport*> transports);
  ~HostTransportDriver();
  HostTransportDriver(const HostTransportDriver&) = delete;
  HostTransportDriver& operator=(const HostTransportDriver&) = delete;

  // The job ends: drain until `deadline`, then send what is there.
  void request_stop(std::chrono::steady_clock::time_point deadline);
  void join();

 private:
  void run();

  std::vector<HostTransport*> transports_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::chrono::steady_clock::rep> deadline_{0};
  std::thread thread_;
};

}  // namespace sp::rank_pipeline
