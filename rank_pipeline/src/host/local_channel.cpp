#include "local_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <memory>
#include <random>

namespace sp::rank_pipeline {
namespace {

constexpr size_t kHeaderBytes = 5;  // u32 length, u8 type
constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kReadPerCall = 1u << 20;

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// sockaddr for an abstract name: sun_path starts with '\0', the rest is the name (no terminator).
socklen_t abstract_address(const std::string& name, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  const size_t n = std::min(name.size(), sizeof(addr->sun_path) - 1);
  std::memcpy(addr->sun_path + 1, name.data(), n);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

std::string random_name() {
  std::random_device rd;
  const uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[64];
  std::snprintf(buf, sizeof buf, "straggler_probe.%d.%016llx", static_cast<int>(getpid()),
                static_cast<unsigned long long>(r));
  return buf;
}

bool known_type(uint8_t t) { return t >= 1 && t <= 9; }

}  // namespace

FrameSocket::FrameSocket(int fd) : fd_(fd) {}

FrameSocket::~FrameSocket() {
  if (fd_ >= 0) close(fd_);
}

bool FrameSocket::queue(FrameType type, std::string_view payload, size_t limit) {
  if (out_.size() - out_pos_ > limit) return false;
  if (out_pos_ == out_.size()) {
    out_.clear();
    out_pos_ = 0;
  }
  const uint32_t length = static_cast<uint32_t>(payload.size() + 1);
  for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((length >> (8 * i)) & 0xFFu));
  out_.push_back(static_cast<char>(type));
  out_.append(payload.data(), payload.size());
  return true;
}

bool FrameSocket::flush(std::string* error) {
  while (out_pos_ < out_.size()) {
    const ssize_t n = send(fd_, out_.data() + out_pos_, out_.size() - out_pos_, MSG_NOSIGNAL);
    if (n > 0) {
      out_pos_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    *error = errno_text("send");
    return false;
  }
  return true;
}

bool FrameSocket::read(std::vector<Frame>* frames, size_t max_frames, std::string* error) {
  error->clear();
  // Whole frames already buffered first: a bounded read per call keeps one busy peer from
  // starving the others.
  if (!parse(frames, max_frames, error)) return false;
  // Received into one buffer per thread, then only the bytes that came are appended: growing
  // `in_` by a whole chunk before each recv zero-filled 64 KiB per call, and most calls of an
  // idle transport get nothing (EAGAIN).
  thread_local std::unique_ptr<char[]> chunk;
  if (!chunk) chunk = std::make_unique<char[]>(kReadChunk);
  for (size_t got = 0; got < kReadPerCall && frames->size() < max_frames;) {
    const ssize_t n = recv(fd_, chunk.get(), kReadChunk, 0);
    if (n > 0) in_.append(chunk.get(), static_cast<size_t>(n));
    if (n == 0) return false;  // orderly close
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
      // A peer process that ended (killed with frames of ours unread) resets the connection
      // instead of closing it: the same news as an orderly close, and the job's own failure,
      // which torch reports; a warning of the probe's here would be a second one for it.
      if (errno == ECONNRESET) return false;
      *error = errno_text("recv");
      return false;
    }
    got += static_cast<size_t>(n);
    if (!parse(frames, max_frames, error)) return false;
  }
  return true;
}

bool FrameSocket::parse(std::vector<Frame>* frames, size_t max_frames, std::string* error) {
  size_t pos = 0;
  while (frames->size() < max_frames && in_.size() - pos >= kHeaderBytes) {
    uint32_t length = 0;
    for (int i = 0; i < 4; ++i) {
      length |= static_cast<uint32_t>(static_cast<unsigned char>(in_[pos + static_cast<size_t>(i)]))
                << (8 * i);
    }
    const auto type = static_cast<uint8_t>(in_[pos + 4]);
    if (length == 0 || length > kMaxFrameBytes || !known_type(type)) {
      *error = "a frame that is not the probe's (length " + std::to_string(length) + ", type " +
               std::to_string(type) + ")";
      return false;
    }
    if (in_.size() - pos - 4 < length) break;  // not all there yet
    frames->push_back(Frame{static_cast<FrameType>(type), in_.substr(pos + kHeaderBytes, length - 1)});
    pos += 4 + length;
  }
  in_.erase(0, pos);
  return true;
}

FrameListener::~FrameListener() {
  if (fd_ >= 0) close(fd_);
}

std::unique_ptr<FrameListener> FrameListener::open(std::string* error) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return *error = errno_text("socket"), nullptr;
  for (int attempt = 0; attempt < 4; ++attempt) {
    std::string name = random_name();
    sockaddr_un addr{};
    const socklen_t len = abstract_address(name, &addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0) {
      if (listen(fd, SOMAXCONN) != 0) break;
      return std::unique_ptr<FrameListener>(new FrameListener(fd, std::move(name)));
    }
    if (errno != EADDRINUSE) break;
  }
  *error = errno_text("bind/listen");
  close(fd);
  return nullptr;
}

std::unique_ptr<FrameSocket> FrameListener::accept() {
  const int fd = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) return nullptr;
  return std::make_unique<FrameSocket>(fd);
}

std::unique_ptr<FrameSocket> connect_frame_socket(const std::string& name, bool* retry,
                                                  std::string* error) {
  *retry = false;
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return *error = errno_text("socket"), nullptr;
  sockaddr_un addr{};
  const socklen_t len = abstract_address(name, &addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0) {
    return std::make_unique<FrameSocket>(fd);
  }
  *retry = errno == EAGAIN || errno == ECONNREFUSED || errno == ENOENT || errno == EINTR;
  *error = errno_text("connect to the host's leader");
  close(fd);
  return nullptr;
}

void wait_readable(const std::vector<int>& fds, std::chrono::milliseconds timeout) {
  std::vector<pollfd> p;
  p.reserve(fds.size());
  for (int fd : fds) p.push_back(pollfd{fd, POLLIN, 0});
  if (p.empty()) {
    poll(nullptr, 0, static_cast<int>(timeout.count()));
    return;
  }
  poll(p.data(), p.size(), static_cast<int>(timeout.count()));
}

}  // namespace sp::rank_pipeline
