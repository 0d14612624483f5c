#include "host_transport_driver.h"

namespace sp::rank_pipeline {

HostTransportDriver::HostTransportDriver(std::vector<HostTransport*> transports)
    : transports_(std::move(transports)) {
  thread_ = std::thread([this] { run(); });
}

HostTransportDriver::~HostTransportDriver() {
  if (thread_.joinable()) {
    request_stop(std::chrono::steady_clock::now());
    thread_.join();
  }
}

void HostTransportDriver::request_stop(std::chrono::steady_clock::time_point deadline) {
  deadline_.store(deadline.time_since_epoch().count());
  stopping_.store(true);
}

void HostTransportDriver::join() {
  if (thread_.joinable()) thread_.join();
}

void HostTransportDriver::run() {
  for (HostTransport* t : transports_) t->start();
  std::vector<bool> done(transports_.size(), false);
  size_t running = transports_.size();
  while (running > 0) {
    const bool stopping = stopping_.load();
    const bool late = stopping && std::chrono::steady_clock::now().time_since_epoch().count() >=
                                      deadline_.load();
    bool any = false;
    for (size_t i = 0; i < transports_.size(); ++i) {
      if (done[i]) continue;
      bool progress = false;
      if (transports_[i]->pass(stopping, late, 0, &progress) != HostTransport::State::kRunning) {
        done[i] = true;
        --running;
      }
      any |= progress;
    }
    if (!any) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace sp::rank_pipeline
