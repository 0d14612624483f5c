// Whole-file reads with transparent gzip inflation (detected by magic bytes, not by name).
#include <zlib.h>
#ifdef SP_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "straggler_probe/whatif/trace_loader.h"

namespace sp::whatif {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

std::string read_raw(const std::string& path) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) throw TraceError(path, 0, "", std::string("cannot open: ") + std::strerror(errno));
  std::string data;
  // One allocation for regular files; pipes and the like (size unknown) just grow.
  if (std::fseek(f.get(), 0, SEEK_END) == 0) {
    if (const long size = std::ftell(f.get()); size > 0) data.reserve(static_cast<size_t>(size));
    std::rewind(f.get());
  }
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) data.append(buf, n);
  if (std::ferror(f.get())) throw TraceError(path, 0, "", std::string("read error: ") + std::strerror(errno));
  return data;
}

bool has_gzip_magic(const std::string& data, size_t at) {
  return data.size() >= at + 2 && static_cast<unsigned char>(data[at]) == 0x1f &&
         static_cast<unsigned char>(data[at + 1]) == 0x8b;
}

// The trailer's ISIZE (uncompressed size mod 2^32) is a good first guess for single members.
// Only a guess: a truncated file ends in arbitrary bytes, so it is capped at a ratio that text
// rarely exceeds (CSV traces compress about 4:1).
size_t inflated_size_guess(const std::string& in) {
  if (in.size() < 18) return 0;
  const auto* t = reinterpret_cast<const unsigned char*>(in.data() + in.size() - 4);
  const size_t isize = uint32_t{t[0]} | uint32_t{t[1]} << 8 | uint32_t{t[2]} << 16 | uint32_t{t[3]} << 24;
  return std::min(isize, in.size() * 32);
}

#ifdef SP_HAVE_LIBDEFLATE
struct DecompressorFree {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

// Whole-buffer inflation with libdeflate, member after member. Only the fast path for good
// files: on any failure it gives up (nullopt) and the zlib path below finds and names the
// problem, so both builds give the same messages.
std::optional<std::string> inflate_gzip_fast(const std::string& in) {
  std::unique_ptr<libdeflate_decompressor, DecompressorFree> d(libdeflate_alloc_decompressor());
  if (!d) return std::nullopt;
  std::string out(inflated_size_guess(in), '\0');
  size_t pos = 0, written = 0;
  while (pos < in.size()) {
    if (!has_gzip_magic(in, pos)) return std::nullopt;
    size_t in_used = 0, out_used = 0;
    const libdeflate_result rc = libdeflate_gzip_decompress_ex(d.get(), in.data() + pos, in.size() - pos,
                                                               out.data() + written, out.size() - written,
                                                               &in_used, &out_used);
    if (rc == LIBDEFLATE_INSUFFICIENT_SPACE) {
      out.resize(out.size() * 2 + (1 << 20));  // the guess was short: this member again, with room
      continue;
    }
    if (rc != LIBDEFLATE_SUCCESS) return std::nullopt;
    pos += in_used;
    written += out_used;
  }
  out.resize(written);
  return out;
}
#endif

struct InflateEnd {
  void operator()(z_stream* s) const { inflateEnd(s); }
};

// Inflates one or more concatenated gzip members (RFC 1952 allows concatenation; pigz and
// `cat a.gz b.gz` produce it). Any shortfall is an error: a truncated trace would otherwise
// pass as a shorter but valid-looking one.
std::string inflate_gzip(const std::string& path, const std::string& in) {
  std::string out;
  out.reserve(inflated_size_guess(in));
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw TraceError(path, 0, "", "zlib initialisation failed");
  std::unique_ptr<z_stream, InflateEnd> guard(&zs);

  size_t pos = 0;
  while (true) {
    const size_t chunk = std::min<size_t>(in.size() - pos, std::numeric_limits<uInt>::max());
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + pos));
    zs.avail_in = static_cast<uInt>(chunk);
    int rc = Z_OK;
    while (rc == Z_OK) {
      if (out.capacity() - out.size() < (1 << 16)) out.reserve(out.capacity() * 2 + (1 << 20));
      const size_t old = out.size();
      const size_t room = std::min<size_t>(out.capacity() - old, std::numeric_limits<uInt>::max());
      out.resize(old + room);
      zs.next_out = reinterpret_cast<Bytef*>(out.data() + old);
      zs.avail_out = static_cast<uInt>(room);
      rc = inflate(&zs, Z_NO_FLUSH);
      out.resize(old + room - zs.avail_out);
      if (rc == Z_BUF_ERROR && zs.avail_in > 0) rc = Z_OK;  // only out of output room
    }
    pos += chunk - zs.avail_in;
    if (rc == Z_STREAM_END) {
      if (pos == in.size()) return out;
      if (!has_gzip_magic(in, pos)) {
        throw TraceError(path, 0, "", "trailing data after the end of the gzip stream");
      }
      inflateReset(&zs);
      continue;
    }
    if (rc == Z_BUF_ERROR && pos == in.size()) {
      throw TraceError(path, 0, "", "truncated gzip data (unexpected end of file)");
    }
    if (rc == Z_BUF_ERROR) continue;  // input was capped at uInt max: feed the rest
    throw TraceError(path, 0, "", std::string("corrupt gzip data: ") + (zs.msg ? zs.msg : "unknown error"));
  }
}

}  // namespace

std::string read_file_maybe_gzip(const std::string& path) {
  std::string raw = read_raw(path);
  if (!has_gzip_magic(raw, 0)) return raw;
#ifdef SP_HAVE_LIBDEFLATE
  if (std::optional<std::string> fast = inflate_gzip_fast(raw)) return std::move(*fast);
#endif
  return inflate_gzip(path, raw);
}

}  // namespace sp::whatif
