// Whole-file reads: gzip found by magic bytes, concatenated members, truncation and corruption.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "straggler_probe/whatif/trace_loader.h"

namespace sp::whatif {
namespace {

namespace fs = std::filesystem;

std::string gzip(const std::string& data) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

class GzipRead : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sp_gzip_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
  std::string error_of(const std::string& path) {
    try {
      read_file_maybe_gzip(path);
    } catch (const TraceError& e) {
      return e.what();
    }
    return "(no error)";
  }
  fs::path dir_;
};

// A big, poorly compressible payload so the output buffer has to grow several times.
std::string payload() {
  std::string s;
  unsigned x = 12345;
  for (int i = 0; i < 200000; ++i) {
    x = x * 1103515245u + 12345u;
    s += std::to_string(x % 1000003) + (i % 11 == 10 ? "\n" : ",");
  }
  return s;
}

TEST_F(GzipRead, DetectsGzipByMagicNotByName) {
  const std::string text = payload();
  EXPECT_EQ(read_file_maybe_gzip(write("trace.csv", gzip(text))), text);
  EXPECT_EQ(read_file_maybe_gzip(write("trace.csv.gz", text)), text);
}

TEST_F(GzipRead, ReadsConcatenatedMembers) {
  EXPECT_EQ(read_file_maybe_gzip(write("two.gz", gzip("first,") + gzip("second\n"))), "first,second\n");
}

TEST_F(GzipRead, RejectsTruncatedData) {
  const std::string gz = gzip(payload());
  const std::string path = write("cut.csv.gz", gz.substr(0, gz.size() / 2));
  EXPECT_EQ(error_of(path), path + ": truncated gzip data (unexpected end of file)");
  // Missing only the 8-byte trailer (CRC and size) is still truncation.
  const std::string path2 = write("cut2.csv.gz", gz.substr(0, gz.size() - 4));
  EXPECT_EQ(error_of(path2), path2 + ": truncated gzip data (unexpected end of file)");
}

TEST_F(GzipRead, RejectsCorruptDataAndTrailingGarbage) {
  std::string gz = gzip(payload());
  gz[gz.size() - 6] = static_cast<char>(gz[gz.size() - 6] ^ 0x55);  // inside the CRC
  const std::string path = write("bad.gz", gz);
  EXPECT_EQ(error_of(path), path + ": corrupt gzip data: incorrect data check");
  const std::string path2 = write("tail.gz", gzip("a\n") + "junk");
  EXPECT_EQ(error_of(path2), path2 + ": trailing data after the end of the gzip stream");
}

TEST_F(GzipRead, NamesAMissingFile) {
  const std::string path = (dir_ / "nope.csv").string();
  EXPECT_EQ(error_of(path), path + ": cannot open: No such file or directory");
}

}  // namespace
}  // namespace sp::whatif
