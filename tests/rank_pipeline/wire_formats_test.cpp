// What crosses processes besides the summaries: the host messages rank 0 reads from the store,
// the rank table's rows, and the frames on a host's Unix socket. Each round-trips, and each
// rejects cut or foreign bytes with one line that does not echo them.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <string>
#include <thread>
#include <vector>

#include "host/host_message.h"
#include "host/local_channel.h"
#include "base/rank_row.h"

namespace sp::rank_pipeline {
namespace {

TEST(HostMessage, RoundTripsConcatenated) {
  HostMessage a;
  a.step = 41;
  a.leader = 8;
  a.summaries = {{8, "first"}, {9, std::string("se\0cond", 7)}};
  a.missing = {10, 11};
  HostMessage b;
  b.step = 41;
  b.leader = 16;
  std::string bytes;
  append_host_message(a, &bytes);
  append_host_message(b, &bytes);
  std::vector<HostMessage> out;
  std::string error;
  ASSERT_TRUE(parse_host_messages(bytes, &out, &error)) << error;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].step, 41);
  EXPECT_EQ(out[0].leader, 8);
  EXPECT_EQ(out[0].summaries, a.summaries);
  EXPECT_EQ(out[0].missing, a.missing);
  EXPECT_EQ(out[1].leader, 16);
  EXPECT_TRUE(out[1].summaries.empty());
}

TEST(HostMessage, EveryCutAndForeignBytesAreRejectedWithOneLine) {
  HostMessage a;
  a.step = 3;
  a.leader = 0;
  a.summaries = {{0, "abc"}, {1, "defg"}};
  a.missing = {2};
  std::string bytes;
  append_host_message(a, &bytes);
  for (size_t n = 1; n < bytes.size(); ++n) {
    std::vector<HostMessage> out;
    std::string error;
    EXPECT_FALSE(parse_host_messages(std::string_view(bytes).substr(0, n), &out, &error)) << n;
    EXPECT_EQ(error.rfind("host message at byte 0: ", 0), 0u) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
  std::string foreign = bytes;
  foreign[4] = 'X';  // the magic
  std::vector<HostMessage> out;
  std::string error;
  EXPECT_FALSE(parse_host_messages(foreign, &out, &error));
  EXPECT_NE(error.find("bad magic"), std::string::npos) << error;
  EXPECT_FALSE(parse_host_messages(bytes + "tail", &out, &error));
  EXPECT_EQ(out.size(), 1u);  // the whole message before the garbage is kept
}

TEST(RankTable, RowsRoundTripAndBadRowsAreCountedNotTaken) {
  std::vector<RankInfo> table(4);
  const std::string rows = encode_rank_row(rank_row(0, 0, 0, 3, "node-0")) +
                           encode_rank_row(rank_row(2, 0, 2, -1, "host with spaces/é")) +
                           "1 0 1 nonsense\n" + "7 0 0 0 node-7\n" +
                           encode_rank_row(rank_row(0, 0, 0, 4, "node-0")) + "3 0 1";
  std::string error;
  EXPECT_EQ(parse_rank_rows(rows, &table, &error), 4u);  // malformed, outside, contradicts, cut
  EXPECT_EQ(error, "rank table: row 2 is malformed");
  EXPECT_EQ(table[0].host, "node-0");
  EXPECT_EQ(table[0].device, 3);
  EXPECT_EQ(table[2].host, "host_with_spaces___");  // cleaned before it travels
  EXPECT_TRUE(table[1].host.empty());
  EXPECT_TRUE(table[3].host.empty());
  EXPECT_EQ(clean_host_name(std::string(100, 'a')).size(), 64u);
  EXPECT_EQ(clean_host_name(""), "unknown");
}

TEST(LocalChannel, FramesCrossAndForeignBytesCloseTheConnection) {
  std::string error;
  auto listener = FrameListener::open(&error);
  ASSERT_TRUE(listener) << error;
  bool retry = false;
  auto client = connect_frame_socket(listener->name(), &retry, &error);
  ASSERT_TRUE(client) << error;
  std::unique_ptr<FrameSocket> server;
  for (int i = 0; i < 100 && !server; ++i) {
    server = listener->accept();
    if (!server) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(server);
  const std::string big(3u << 20, 'x');  // larger than one socket buffer: several flushes
  ASSERT_TRUE(client->queue(FrameType::kSummary, big, SIZE_MAX));
  ASSERT_TRUE(client->queue(FrameType::kBye, "", SIZE_MAX));
  EXPECT_FALSE(client->queue(FrameType::kBye, "", 0));  // over the limit: not queued
  std::vector<Frame> frames;
  for (int i = 0; i < 2000 && frames.size() < 2; ++i) {
    ASSERT_TRUE(client->flush(&error)) << error;
    ASSERT_TRUE(server->read(&frames, 8, &error)) << error;
  }
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].type, FrameType::kSummary);
  EXPECT_EQ(frames[0].payload, big);
  EXPECT_EQ(frames[1].type, FrameType::kBye);
  // bytes that are not a frame of ours
  const char junk[] = "GET / HTTP/1.1\r\n";
  ASSERT_GT(send(client->fd(), junk, sizeof junk, 0), 0);
  frames.clear();
  bool open = true;
  for (int i = 0; i < 100 && open; ++i) {
    open = server->read(&frames, 8, &error);
    if (open) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_FALSE(open);
  EXPECT_EQ(error.rfind("a frame that is not the probe's", 0), 0u) << error;
  EXPECT_EQ(error.find("HTTP"), std::string::npos);  // the bytes are not echoed
}

}  // namespace
}  // namespace sp::rank_pipeline
