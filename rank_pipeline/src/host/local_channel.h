// The channel between the ranks of one host and the host's leader: length-prefixed frames over a
// Unix stream socket in Linux's abstract namespace (no file to clean up, gone with the process,
// scoped to the network namespace). Every call is non-blocking: the transport threads poll, so
// that a peer that stops reading can only fill its own socket buffer.
//
// Frame: u32 length (type byte + payload, little-endian), u8 type, payload.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sp::rank_pipeline {

enum class FrameType : uint8_t {
  kHello = 1,    // member -> leader: i32 rank
  kSummary = 2,  // member -> leader: i64 step, then the encoded summary
  kBye = 3,      // member -> leader: nothing more will come (the job ends)
  kStop = 4,     // leader -> member: the probe steps aside everywhere (payload: why)
  kPosted = 5,   // leader -> member: i64 step: the host's steps up to it are posted
  kHeartbeat = 6,  // member -> leader: its heartbeat (heartbeat.h), every kHeartbeatEvery
  kHostBeats = 7,  // leader -> rank 0 (a member): the host's heartbeats, every kHeartbeatEvery
  kHang = 8,       // rank 0 -> its leader -> members, leader -> members: u64 episode: rank 0
                   // suspects a hang (each rank dumps its stacks when asked to)
  kRecording = 9,  // rank 0 -> its leader -> members, leader -> members: u64 generation, u8
                   // paused (0 or 1): /control paused or resumed recording (transport.h)
};

struct Frame {
  FrameType type = FrameType::kHello;
  std::string payload;
};

// Larger than any summary the runtime makes (its per-step event cap): a longer frame is not
// ours, and the connection is dropped.
constexpr size_t kMaxFrameBytes = 64u << 20;

class FrameSocket {
 public:
  explicit FrameSocket(int fd);
  ~FrameSocket();
  FrameSocket(const FrameSocket&) = delete;
  FrameSocket& operator=(const FrameSocket&) = delete;

  int fd() const { return fd_; }
  // Queues a frame for flush(); false (nothing queued) when `limit` bytes are already waiting.
  bool queue(FrameType type, std::string_view payload, size_t limit);
  // Writes what the socket takes now. false: the peer is gone (*error says why).
  bool flush(std::string* error);
  bool outbox_empty() const { return out_pos_ == out_.size(); }
  size_t outbox_bytes() const { return out_.size() - out_pos_; }
  // Reads what is there and appends whole frames until *frames holds max_frames. false: closed (error "") or a
  // frame that is not ours (error says which); frames read before either are still appended.
  bool read(std::vector<Frame>* frames, size_t max_frames, std::string* error);

 private:
  bool parse(std::vector<Frame>* frames, size_t max_frames, std::string* error);

  int fd_;
  std::string out_;
  size_t out_pos_ = 0;
  std::string in_;
};

class FrameListener {
 public:
  ~FrameListener();
  FrameListener(const FrameListener&) = delete;
  FrameListener& operator=(const FrameListener&) = delete;

  // Listens on a fresh random abstract name (name() tells it); null with *error on failure.
  static std::unique_ptr<FrameListener> open(std::string* error);
  const std::string& name() const { return name_; }
  int fd() const { return fd_; }
  // A waiting connection, or null.
  std::unique_ptr<FrameSocket> accept();

 private:
  FrameListener(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  int fd_;
  std::string name_;
};

// Connects to a listener's name. null with *error set; *retry tells whether trying again later
// may help (the listener is not there yet, or its backlog is full).
std::unique_ptr<FrameSocket> connect_frame_socket(const std::string& name, bool* retry,
                                                  std::string* error);

// Sleeps until one of fds is readable or the timeout passes (the transport loops' idle wait).
void wait_readable(const std::vector<int>& fds, std::chrono::milliseconds timeout);

}  // namespace sp::rank_pipeline
