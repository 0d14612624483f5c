// Drives many ranks' HostTransports (host_transport.h) from one thread, as their own threads
// would: the ranks bench/scale and the tests simulate by the thousand (as many threads would
// swamp two cores). Not used by a training rank, whose transport has its own thread.
//
// A rank's own thread passes its transport when its socket or its own queue has something, and
// otherwise idles from `poll` to `max_poll`. The driver does the same for all of them at once:
// it passes a transport when one of its sockets is readable or it moved last time, every
// transport when wake() says the ranks' queues got summaries, and every transport once per
// `max_poll` (retries and timeouts). Passing all of them every few milliseconds instead cost one
// recv per simulated rank each time: at 4096 ranks more CPU than the machine had, so the
// harness, not the transport, set the latency it measured.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>
#include <unordered_map>
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

  // The ranks' own queues have new summaries: pass every transport now.
  void wake();
  // The job ends: drain until `deadline`, then send what is there.
  void request_stop(std::chrono::steady_clock::time_point deadline);
  void join();

 private:
  void run();
  // Registers the transports' current sockets with the epoll set (at each full pass: sockets
  // come and go as members connect and leave).
  void sync_sockets(const std::vector<bool>& done);
  // Waits for a socket or wake() (at most `timeout`) and marks what is due; true when woken.
  bool wait(std::chrono::milliseconds timeout, std::vector<char>* due);

  std::vector<HostTransport*> transports_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::chrono::steady_clock::rep> deadline_{0};
  int wake_fd_ = -1;  // an eventfd: wake() and request_stop() write, the thread polls it
  int epoll_fd_ = -1;  // the sockets of every transport, and wake_fd_; -1: full passes only
  std::unordered_map<int, size_t> registered_;  // socket fd -> its transport's index
  std::thread thread_;
};

}  // namespace sp::rank_pipeline
