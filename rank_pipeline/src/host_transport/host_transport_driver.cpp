#include "host_transport_driver.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace sp::rank_pipeline {
namespace {

constexpr auto kBusyWait = std::chrono::milliseconds(2);

}  // namespace

HostTransportDriver::HostTransportDriver(std::vector<HostTransport*> transports)
    : transports_(std::move(transports)), wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      epoll_fd_(epoll_create1(EPOLL_CLOEXEC)) {
  if (epoll_fd_ >= 0 && wake_fd_ >= 0) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.u64 = UINT64_MAX;  // not a transport
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &e);
  }
  thread_ = std::thread([this] { run(); });
}

HostTransportDriver::~HostTransportDriver() {
  if (thread_.joinable()) {
    request_stop(std::chrono::steady_clock::now());
    thread_.join();
  }
  if (wake_fd_ >= 0) close(wake_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

void HostTransportDriver::wake() {
  if (wake_fd_ < 0) return;  // no eventfd: the idle period's full pass takes the summaries
  const uint64_t one = 1;
  const ssize_t n = write(wake_fd_, &one, sizeof one);
  (void)n;  // a full counter still wakes the thread
}

void HostTransportDriver::request_stop(std::chrono::steady_clock::time_point deadline) {
  deadline_.store(deadline.time_since_epoch().count());
  stopping_.store(true);
  wake();
}

void HostTransportDriver::join() {
  if (thread_.joinable()) thread_.join();
}

void HostTransportDriver::sync_sockets(const std::vector<bool>& done) {
  if (epoll_fd_ < 0) return;
  std::unordered_map<int, size_t> now;
  std::vector<int> own;
  for (size_t i = 0; i < transports_.size(); ++i) {
    if (done[i]) continue;
    own.clear();
    transports_[i]->fds(&own);
    for (int fd : own) now[fd] = i;
  }
  // A closed socket left the set by itself; its number may be a new socket's now (MOD or ADD).
  for (const auto& [fd, owner] : registered_) {
    if (!now.count(fd)) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  }
  for (const auto& [fd, owner] : now) {
    const auto was = registered_.find(fd);
    if (was != registered_.end() && was->second == owner) continue;
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.u64 = owner;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &e) != 0) epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e);
  }
  registered_ = std::move(now);
}

bool HostTransportDriver::wait(std::chrono::milliseconds timeout, std::vector<char>* due) {
  if (epoll_fd_ < 0) {
    if (timeout.count() > 0) std::this_thread::sleep_for(timeout);
    return false;
  }
  epoll_event events[256];
  const int n = epoll_wait(epoll_fd_, events, 256, static_cast<int>(timeout.count()));
  bool woken = false;
  for (int k = 0; k < n; ++k) {
    const uint64_t owner = events[k].data.u64;
    if (owner == UINT64_MAX) {
      uint64_t count = 0;
      const ssize_t got = read(wake_fd_, &count, sizeof count);
      (void)got;
      woken = true;
    } else if (owner < due->size()) {
      (*due)[owner] = 1;
    }
  }
  return woken;
}

void HostTransportDriver::run() {
  using std::chrono::milliseconds;
  for (HostTransport* t : transports_) t->start();
  const size_t n = transports_.size();
  std::vector<bool> done(n, false);
  std::vector<char> due(n, 1);
  size_t running = n;
  // Sockets and wake() bring everything a pass moves; the full pass is for the rest (connect
  // retries, timeouts), at the slowest rate a rank's own thread polls.
  const milliseconds full_period = n == 0 ? milliseconds(50) : transports_[0]->context().o.max_poll;
  auto next_full_pass = std::chrono::steady_clock::now();
  while (running > 0) {
    const bool stopping = stopping_.load();
    const auto now = std::chrono::steady_clock::now();
    const bool late = stopping && now.time_since_epoch().count() >= deadline_.load();
    const bool full = now >= next_full_pass;
    if (full || stopping) due.assign(n, 1);
    bool any = false;
    for (size_t i = 0; i < n; ++i) {
      if (done[i] || !due[i]) continue;
      bool progress = false;
      if (transports_[i]->pass(stopping, late, 0, &progress) != HostTransport::State::kRunning) {
        done[i] = true;
        --running;
      }
      due[i] = progress ? 1 : 0;
      any |= progress;
    }
    if (full) {
      next_full_pass = now + full_period;
      sync_sockets(done);
    }
    // Moving: a short wait, as a rank's own thread makes after progress (kBusyWait there).
    // Idle: until a socket, wake() or the next full pass.
    const auto until_full = std::chrono::duration_cast<milliseconds>(next_full_pass - std::chrono::steady_clock::now());
    const milliseconds timeout = std::clamp(until_full, milliseconds(0), any ? kBusyWait : full_period);
    if (wait(timeout, &due)) due.assign(n, 1);
  }
}

}  // namespace sp::rank_pipeline
