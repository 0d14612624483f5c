// The store values rank 0 reads in the host-aggregated protocol (rank_pipeline/src): the hosts'
// messages under d/<step> (host_message.h), alone and as rank 0's StepCollector reads them
// beside the rank table (key ranks) and ctl, down to the analysis worker's decode of each
// summary. A bad value is one warning (TransportWarning: one line, then counted), never a crash.
#include <gtest/gtest.h>

#include "fuzz_engine.h"
#include "host/heartbeat_link.h"
#include "host/host_message.h"
#include "store/local_kv_store.h"
#include "base/rank_row.h"
#include "host_transport/step_collector.h"
#include "summary_seeds.h"

namespace sp::rank_pipeline {
namespace {

using fuzz::Outcome;
using fuzz::Stats;
using namespace std::chrono_literals;

constexpr int kWorld = 4;

std::vector<std::string> host_message_seeds() {
  const std::vector<std::string> summaries = fuzz::encoded_v2(fuzz::seed_summaries());
  HostMessage a;  // step 0, ranks 0-2 of a 4-rank job
  a.leader = 0;
  for (int r = 0; r < 3; ++r) a.summaries.emplace_back(r, summaries[static_cast<size_t>(r) + 3]);
  HostMessage b;  // another host: rank 3
  b.leader = 3;
  b.summaries.emplace_back(3, summaries[0]);
  HostMessage empty;
  empty.step = -1;
  empty.missing = {0, 1, 2, 3};
  std::string one, both, tiny;
  append_host_message(a, &one);
  append_host_message(a, &both);
  append_host_message(b, &both);
  append_host_message(empty, &tiny);
  return {one, both, tiny};
}

// A message cut short keeps its length field; setting it to what is there lets the cut reach
// the message's own parser.
void fix_first_length(std::string* p) {
  if (p->size() < 4) return;
  uint32_t length = 0;
  for (size_t i = 0; i < 4; ++i) length |= static_cast<uint32_t>(static_cast<unsigned char>((*p)[i])) << (8 * i);
  if (length <= p->size() - 4) return;
  const auto fixed = static_cast<uint32_t>(p->size() - 4);
  for (size_t i = 0; i < 4; ++i) (*p)[i] = static_cast<char>((fixed >> (8 * i)) & 0xFF);
}

fuzz::Corpus corpus() {
  fuzz::Corpus c;
  c.seeds = host_message_seeds();
  c.dictionary = {"SPHM", std::string("SPHM\x01", 5), std::string("\x00\x00\x00\x00", 4)};
  c.fixup = fix_first_length;
  c.every_truncation_up_to = 64;
  return c;
}

bool same(const HostMessage& a, const HostMessage& b) {
  return a.step == b.step && a.leader == b.leader && a.summaries == b.summaries && a.missing == b.missing;
}

TEST(FuzzHostMessage, ParsedAlone) {
  const Stats st = fuzz::run_cases("host messages (store d/<step>)", corpus(), fuzz::case_count(),
                                   [](const std::string& bytes) {
    std::vector<HostMessage> out;
    Outcome o;
    o.accepted = parse_host_messages(bytes, &out, &o.error);
    // Whatever parsed (all of it, or the messages before a bad one) re-encodes to itself.
    std::string again;
    for (const HostMessage& m : out) append_host_message(m, &again);
    std::vector<HostMessage> back;
    std::string error;
    EXPECT_TRUE(parse_host_messages(again, &back, &error)) << error;
    EXPECT_EQ(back.size(), out.size());
    for (size_t i = 0; i < std::min(back.size(), out.size()); ++i) EXPECT_TRUE(same(out[i], back[i]));
    return o;
  });
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

// Rank 0's collector over an in-process store holding `value` under `key`, with every rank
// counted for step 0: what it delivers, what it warns, and what the analysis decodes.
struct Rank0 {
  TransportContext c;
  std::vector<std::string> warnings;
  std::vector<StepBatch> batches;

  Rank0() {
    c.o.world_size = kWorld;
    c.o.prefix = "f/";
    c.store = std::make_shared<KvClient>(make_local_kv_store());
    c.counters = std::make_shared<TransportCounters>();
    c.stop = std::make_shared<StopRequest>();
    c.warn = [this](const std::string& w) { warnings.push_back(w); };
    c.deliver = [this](StepBatch&& b) { batches.push_back(std::move(b)); };
    c.watchdog = [] {};
    c.link = std::make_shared<HeartbeatLink>(c.o, c.counters, c.warn);  // as HostTransport sets it
    c.recording = std::make_shared<RecordingRelay>(nullptr);
  }

  Outcome run(const std::string& key, const std::string& value) {
    std::string error;
    c.store->set(c.o.prefix + key, value, &error);
    if (key != "d/0") {  // the step itself is whole: the bytes under test are the other key's
      static const std::string whole = host_message_seeds()[1];
      c.store->set(c.o.prefix + "d/0", whole, &error);
    }
    c.store->add(c.o.prefix + "n/0", kWorld, &error);
    TransportWarning warning(0, c.warn);
    StepCollector collector(c, &warning);
    collector.start();
    collector.note_own(0);
    const auto t0 = StepCollector::Clock::now();
    for (int i = 0; i < 4 && batches.empty() && !collector.remote_stop(); ++i) collector.pump(t0 + i * 10ms);
    EXPECT_LE(warnings.size(), 1u);
    if (const auto stop = collector.remote_stop()) {
      EXPECT_TRUE(fuzz::printable_ascii(*stop)) << "a stop reason kept raw (it is printed)";
    }
    Outcome o;
    if (c.counters->bad_host_messages.load() != 0) {
      EXPECT_EQ(warnings.size(), 1u) << "a bad value without its warning";
      o.error = warnings.empty() ? std::string() : warnings[0];
      return o;
    }
    o.accepted = true;
    for (const StepBatch& b : batches) {
      for (const std::string& bytes : b.by_rank) {
        runtime::StepSummary s;
        if (!bytes.empty() && !runtime::decode_summary(bytes, &s, &error)) {
          fuzz::expect_clean_line(error, "the analysis worker's decode");
        }
      }
    }
    return o;
  }
};

TEST(FuzzHostMessage, ReadByRankZerosCollector) {
  const Stats st = fuzz::run_cases("rank 0 collector: host messages", corpus(), fuzz::case_count(),
                                   [](const std::string& bytes) { return Rank0().run("d/0", bytes); });
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

TEST(FuzzHostMessage, RankTableReadByRankZerosCollector) {
  fuzz::Corpus c;
  std::string rows;
  for (int r = 0; r < kWorld; ++r) rows += encode_rank_row(rank_row(r, r / 2 * 2, r % 2, r % 2, "node-" + std::to_string(r / 2)));
  c.seeds = {rows, encode_rank_row(rank_row(1, 0, 1, -1, "h")), "0 0 0 0 a.b-c_d\n"};
  c.dictionary = {" ", "\n", "-1", "2147483648", "-2147483649", "99999999999999999999", "\t"};
  const Stats st = fuzz::run_cases("rank 0 collector: rank table (store ranks)", c, fuzz::case_count(),
                                   [](const std::string& v) { return Rank0().run("ranks", v); });
  EXPECT_GT(st.rejected, 0u);
  EXPECT_GT(st.accepted, 0u);
}

TEST(FuzzHostMessage, ControlReadByRankZerosCollector) {
  fuzz::Corpus c;
  c.seeds = {"12", "-1", "stop rank 3: out of memory", "stop ", "9223372036854775807", "4 hang 1 2"};
  c.dictionary = {"stop ", " hang ", "\n", "\x1b]0;", "-", "+", " "};
  const Stats st = fuzz::run_cases("rank 0 collector: ctl", c, fuzz::case_count(),
                                   [](const std::string& v) { return Rank0().run("ctl", v); });
  EXPECT_EQ(st.rejected, 0u);  // anything there is taken over, or read as a stop
}

}  // namespace
}  // namespace sp::rank_pipeline
