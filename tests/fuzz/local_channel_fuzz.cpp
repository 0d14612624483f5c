// The host's Unix socket (rank_pipeline/src/host/local_channel.h): the frames a leader reads from its
// members and a member from its leader, as byte streams that arrive in pieces. The framing alone
// over a socket pair, then a real HostLeader and HostMember with a fake peer on the other end: a
// bad stream drops that one connection with one warning that does not echo it; nothing crashes,
// nothing is kept or printed raw.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_engine.h"
#include "hang/heartbeat.h"
#include "host/heartbeat_link.h"
#include "host/host_leader.h"
#include "host/host_member.h"
#include "host/local_channel.h"
#include "store/local_kv_store.h"
#include "straggler_probe/wire_io.h"
#include "summary_seeds.h"

namespace sp::rank_pipeline {
namespace {

using fuzz::Outcome;
using fuzz::Stats;

std::string frame(FrameType type, std::string_view payload) {
  std::string out;
  runtime::wire::Writer w(&out);
  w.u32(static_cast<uint32_t>(payload.size() + 1));
  w.u8(static_cast<uint8_t>(type));
  w.bytes(payload);
  return out;
}

std::string i32(int32_t v) {
  std::string s;
  runtime::wire::Writer(&s).i32(v);
  return s;
}
std::string i64(int64_t v) {
  std::string s;
  runtime::wire::Writer(&s).i64(v);
  return s;
}

Heartbeat beat() {
  Heartbeat hb;
  hb.last_marked_step = 6;
  hb.mark_age_ms = 40;
  hb.has_event = true;
  hb.kind = 1;
  hb.name = "forward";
  return hb;
}

std::string host_beats() {
  HostBeats b;
  b.leader = 0;
  b.ranks = {RankBeat{0, true, 0, beat()}, RankBeat{1, true, 300, beat()}};
  std::string out;
  append_host_beats(b, &out);
  return out;
}

// What a member sends its leader: hello, a few summaries, bye.
fuzz::Corpus member_streams() {
  const std::vector<std::string> summaries = fuzz::encoded_v2(fuzz::seed_summaries());
  fuzz::Corpus c;
  const std::string hello = frame(FrameType::kHello, i32(1));
  c.seeds = {hello + frame(FrameType::kSummary, i64(0) + summaries[0]) +
                 frame(FrameType::kSummary, i64(1) + summaries[1]) + frame(FrameType::kBye, ""),
             hello + frame(FrameType::kSummary, i64(7) + summaries[4]),
             hello + frame(FrameType::kBye, ""),
             hello + frame(FrameType::kHeartbeat, encode_heartbeat_frame(1, beat())) +
                 frame(FrameType::kHang, std::string(8, '\x01')),
             // rank 0 as a member: its pause and resume go to its leader
             frame(FrameType::kHello, i32(0)) + frame(FrameType::kRecording, host::recording_frame({1, true})) +
                 frame(FrameType::kRecording, host::recording_frame({2, false}))};
  c.dictionary = {hello, frame(FrameType::kBye, ""), std::string("\x01\x00\x00\x00", 4),
                  std::string("\x00\x00\x00\x04", 4), std::string(1, '\x06'), std::string(1, '\x08'),
                  std::string(1, '\x09')};
  c.every_truncation_up_to = 64;
  return c;
}

// What a leader sends a member: posted steps, a stop with its reason.
fuzz::Corpus leader_streams() {
  fuzz::Corpus c;
  c.seeds = {frame(FrameType::kPosted, i64(3)) + frame(FrameType::kPosted, i64(4)),
             frame(FrameType::kStop, "rank 2: the probe's recording failed (out of memory)"),
             frame(FrameType::kPosted, i64(-1)) + frame(FrameType::kStop, ""),
             frame(FrameType::kHang, std::string("\x02\0\0\0\0\0\0\0", 8)) + frame(FrameType::kHostBeats, host_beats()),
             frame(FrameType::kRecording, host::recording_frame({3, true})) + frame(FrameType::kPosted, i64(5))};
  c.dictionary = {frame(FrameType::kStop, ""), std::string(1, '\x05'), std::string(1, '\x04'),
                  std::string(1, '\x07'), std::string(1, '\x08'), std::string(1, '\x09')};
  return c;
}

// Writes `bytes` to `fd` in random pieces (the peer sees partial frames).
void send_in_pieces(int fd, const std::string& bytes, fuzz::Rng& rng, const std::function<void()>& between) {
  for (size_t at = 0; at < bytes.size();) {
    const size_t n = std::min(bytes.size() - at, 1 + rng.below(64));
    const ssize_t sent = send(fd, bytes.data() + at, n, MSG_NOSIGNAL);
    if (sent <= 0) return;  // the reader dropped the connection
    at += static_cast<size_t>(sent);
    if (rng.chance(30)) between();
  }
}

// One read of at most `max` frames, appended to *all.
bool read_some(FrameSocket& reader, size_t max, std::vector<Frame>* all, std::string* error) {
  std::vector<Frame> frames;
  const bool open = reader.read(&frames, max, error);
  for (Frame& f : frames) all->push_back(std::move(f));
  return open;
}

TEST(FuzzLocalChannel, Framing) {
  fuzz::Rng rng(fuzz::base_seed() ^ 0x4652414d);
  fuzz::Corpus c = member_streams();
  for (const std::string& s : leader_streams().seeds) c.seeds.push_back(s);
  const Stats st = fuzz::run_cases("host socket frames", c, fuzz::case_count(), [&](const std::string& bytes) {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
    FrameSocket reader(fds[0]);
    std::vector<Frame> frames;
    std::string error;
    bool open = true;
    send_in_pieces(fds[1], bytes, rng, [&] { open = open && read_some(reader, 1 + rng.below(4), &frames, &error); });
    close(fds[1]);
    while (open) open = read_some(reader, 8, &frames, &error);
    // The frames read are exactly the stream's first bytes, framed again.
    std::string again;
    for (const Frame& f : frames) again += frame(f.type, f.payload);
    EXPECT_EQ(bytes.compare(0, again.size(), again), 0) << "frames not read as sent";
    Outcome o;
    o.accepted = error.empty();  // closed by the peer after whole (or cut) frames
    o.error = error;
    return o;
  });
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

struct Peer {
  TransportContext c;
  std::vector<std::string> warnings;
  explicit Peer(int rank) {
    c.o.rank = rank;
    c.o.world_size = 4;
    c.o.prefix = "f/";
    c.store = std::make_shared<KvClient>(make_local_kv_store());
    c.counters = std::make_shared<TransportCounters>();
    c.stop = std::make_shared<StopRequest>();
    c.warn = [this](const std::string& w) { warnings.push_back(w); };
    c.link = std::make_shared<HeartbeatLink>(c.o, c.counters, c.warn);  // as HostTransport sets it
    c.recording = std::make_shared<RecordingRelay>(nullptr);
  }
  // At most one transport warning and one heartbeat warning (each its own TransportWarning).
  Outcome outcome() {
    EXPECT_LE(warnings.size(), 2u);
    Outcome o;
    o.accepted = warnings.empty();
    if (!o.accepted) o.error = warnings[0];
    return o;
  }
};

TEST(FuzzLocalChannel, ReadByTheHostsLeader) {
  fuzz::Rng rng(fuzz::base_seed() ^ 0x4c454144);
  const Stats st = fuzz::run_cases("host leader: member frames", member_streams(), fuzz::case_count(),
                                   [&](const std::string& bytes) {
    Peer p(0);
    TransportWarning warning(0, p.c.warn);
    std::string error;
    auto listener = FrameListener::open(&error);
    EXPECT_TRUE(listener) << error;
    if (!listener) return Outcome{};
    bool retry = false;
    auto member = connect_frame_socket(listener->name(), &retry, &error);
    EXPECT_TRUE(member) << error;
    if (!member) return Outcome{};
    HostLeader leader(p.c, std::move(listener), "", &warning);
    const auto now = HostRole::Clock::now();
    const int fd = dup(member->fd());
    member.reset();
    send_in_pieces(fd, bytes, rng, [&] { leader.pump(now, false); });
    close(fd);  // without a bye: its process ended (no warning for that)
    for (int i = 0; i < 8; ++i) leader.pump(now, false);
    leader.pump(now, true);
    return p.outcome();
  });
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

TEST(FuzzLocalChannel, ReadByAHostMember) {
  fuzz::Rng rng(fuzz::base_seed() ^ 0x4d454d42);
  const Stats st = fuzz::run_cases("host member: leader frames", leader_streams(), fuzz::case_count(),
                                   [&](const std::string& bytes) {
    Peer p(1);
    TransportWarning warning(1, p.c.warn);
    std::string error;
    auto listener = FrameListener::open(&error);
    EXPECT_TRUE(listener) << error;
    if (!listener) return Outcome{};
    HostMember member(p.c, listener->name(), 0, "", &warning);
    const auto now = HostRole::Clock::now();
    member.pump(now, false);  // connects and says hello
    std::unique_ptr<FrameSocket> leader;
    for (int i = 0; i < 1000 && !leader; ++i) leader = listener->accept();
    EXPECT_TRUE(leader) << "the member did not connect";
    if (!leader) return Outcome{};
    const int fd = dup(leader->fd());
    leader.reset();
    send_in_pieces(fd, bytes, rng, [&] { member.pump(now, false); });
    for (int i = 0; i < 4; ++i) member.pump(now, false);
    if (const auto stop = member.remote_stop()) {
      EXPECT_TRUE(fuzz::printable_ascii(*stop)) << "a stop reason from the socket kept raw";
    }
    Outcome o = p.outcome();
    close(fd);  // kept open until now: a leader that goes away is a warning of its own
    return o;
  });
  EXPECT_GT(st.rejected, 0u);
}

}  // namespace
}  // namespace sp::rank_pipeline
