// Heartbeats: what each rank did last and when, for rank 0's hang detection (hang_watch.h).
//
// A rank's runtime keeps its heartbeat (sp_get_heartbeat: its last finished event and its last
// step mark, published by the consumer thread: nothing on the recording path). Its transport
// thread sends it to the host's leader over the host's Unix socket every kHeartbeatEvery, and
// when it marked a step (FrameType::kHeartbeat); the leader keeps the last one of each member with when it came, and
// aggregates them (HostBeats): to rank 0 over the socket when rank 0 is on its host, to the
// store only when rank 0 asks (a step overdue). A clean job sends no heartbeat to the store.
//
// Times travel as ages (milliseconds before the sender's "now"), never as clock readings, so
// that no two hosts' clocks have to agree; whoever keeps a heartbeat adds the time it held it.
// Every field from another process is checked (bounds, printable names) before use: a frame
// that fails gets one warning, naming what was wrong, never its bytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "straggler_probe/rank_pipeline/runtime_calls.h"

namespace sp::rank_pipeline {

inline constexpr auto kHeartbeatEvery = std::chrono::milliseconds(500);
// A rank that marked a step sends at once (at most this often), so that what its leader holds
// when it stops is its last step, not one from half a period before.
inline constexpr auto kHeartbeatSoonest = std::chrono::milliseconds(100);
// Op names longer than this are cut (the runtime's heartbeat holds 47 bytes).
inline constexpr size_t kMaxHeartbeatName = 47;
// More ranks than one host runs (HostLeader's member cap).
inline constexpr size_t kMaxHostBeats = 1024;

struct Heartbeat {
  int64_t last_marked_step = -1;  // -1: no step marked yet
  int64_t mark_age_ms = -1;       // how long ago it was marked; -1: never
  bool has_event = false;         // the fields below are set
  uint32_t kind = 0;              // sp_op_kind
  uint32_t coll = 0;              // sp_coll_type
  int32_t microbatch = -1;
  int64_t event_step = -1;
  int64_t event_age_ms = 0;       // how long ago the event ended
  uint64_t events_in_step = 0;    // events of the step in progress: how far into it the rank is
  std::string name;               // the op's name, printable ASCII, at most kMaxHeartbeatName
};

// `hb` as seen `ms` later (its ages grown by that much).
Heartbeat aged(Heartbeat hb, int64_t ms);

// Fills *out with this rank's heartbeat now; false when there is none (no runtime, or not yet).
using HeartbeatSource = std::function<bool(Heartbeat*)>;
// This process's runtime's (its get_heartbeat, runtime_calls.h); a source that says false when
// it has none.
HeartbeatSource runtime_heartbeat_source(const RuntimeCalls& runtime);

// One rank of a host, as its leader saw it when it made the aggregate.
struct RankBeat {
  int rank = -1;
  bool heard = false;     // false: no heartbeat came from it yet (hb is empty)
  int64_t silent_ms = 0;  // since its last heartbeat reached the leader (0: the leader itself)
  Heartbeat hb;           // ages as of the aggregate
};

// A host's heartbeats, made by its leader.
struct HostBeats {
  int leader = -1;
  uint64_t round = 0;  // the ask round it answers (store); 0 over the socket
  std::vector<RankBeat> ranks;
};

// FrameType::kHeartbeat's payload: u8 version, z rank, the heartbeat.
std::string encode_heartbeat_frame(int rank, const Heartbeat& hb);
// false with one line in *error (what is wrong, never the bytes).
bool decode_heartbeat_frame(std::string_view payload, int world_size, int* rank, Heartbeat* hb,
                            std::string* error);

// u32 length, magic "SPHB", u8 version, z leader, v round, v count, per rank: z rank, u8 heard,
// v silent_ms, the heartbeat. Appended to the store key hb/<round> (one per answering host), or
// alone in a FrameType::kHostBeats frame.
void append_host_beats(const HostBeats& beats, std::string* out);
// Every ranks' number is checked against world_size. false with one line at the first bad one.
bool parse_host_beats(std::string_view bytes, int world_size, std::vector<HostBeats>* out,
                      std::string* error);

// "forward mb=3", "ddp-bucket-all-reduce", "none": how a line names a rank's last op.
std::string describe_op(const Heartbeat& hb);

}  // namespace sp::rank_pipeline
