// A store that stops answering (the process hosting it killed): the client pauses its calls after
// a failure instead of hammering it (a TCPStore client logs every failed call at length), gives
// up after KvClient::kLostAfter failures in a row, says so once (on_lost, with the first error's
// first line) and from then on fails every call at once. A store that answers again in between
// resets the count.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "store/kv_client.h"

namespace sp::rank_pipeline {
namespace {

using namespace std::chrono_literals;

struct FlakyStore {
  sp_kv_store base;
  std::atomic<bool> up{true};
  std::atomic<int> calls{0};
};

int flaky_set(void* self, const char*, const void*, size_t, char* err, size_t cap) {
  auto* s = static_cast<FlakyStore*>(self);
  s->calls++;
  if (s->up) return 0;
  std::strncpy(err, "Broken pipe\nException raised from sendBytes (most recent call first):\nframe #0",
               cap - 1);
  return -1;
}
int flaky_get(void*, const char*, sp_kv_sink, void*, char*, size_t) { return 0; }
int flaky_remove(void*, const char*, char*, size_t) { return 0; }
void flaky_destroy(void*) {}

const sp_kv_store_vtable kFlaky = {offsetof(sp_kv_store_vtable, add), flaky_set, flaky_get,
                                   flaky_remove, flaky_destroy, nullptr, nullptr, nullptr};

TEST(KvClientHealth, AStoreThatKeepsFailingIsLostOnceAndNotCalledAgain) {
  FlakyStore store;
  store.base = {&kFlaky, &store};
  KvClient client(&store.base);
  std::atomic<int> lost{0};
  std::string said;
  client.set_on_lost([&](const std::string& why) {
    lost++;
    said = why;
  });
  std::string error;
  EXPECT_TRUE(client.set("k", "v", &error));
  store.up = false;
  const auto start = std::chrono::steady_clock::now();
  while (!client.lost() && std::chrono::steady_clock::now() - start < 10s) {
    client.set("k", "v", &error);  // a transport polling every millisecond
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(client.lost());
  EXPECT_EQ(store.calls.load(), 1 + KvClient::kLostAfter);  // the pauses kept the rest away
  EXPECT_GE(std::chrono::steady_clock::now() - start, KvClient::kFirstPause * 3);
  EXPECT_EQ(lost.load(), 1);
  EXPECT_EQ(said, "Broken pipe");  // one line, not the backtrace
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(client.set("k", "v", &error));
  EXPECT_EQ(error, "the store is unreachable (Broken pipe)");
  EXPECT_EQ(store.calls.load(), 1 + KvClient::kLostAfter);
  EXPECT_EQ(lost.load(), 1);
}

TEST(KvClientHealth, AnAnswerInBetweenResetsTheCount) {
  FlakyStore store;
  store.base = {&kFlaky, &store};
  KvClient client(&store.base);
  std::string error;
  for (int round = 0; round < 5; ++round) {
    store.up = false;
    EXPECT_FALSE(client.set("k", "v", &error));
    std::this_thread::sleep_for(KvClient::kFirstPause + 20ms);
    store.up = true;
    EXPECT_TRUE(client.set("k", "v", &error));
  }
  EXPECT_FALSE(client.lost());
}

}  // namespace
}  // namespace sp::rank_pipeline
