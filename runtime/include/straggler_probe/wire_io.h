// Little-endian fixed-width and LEB128 varint writing and bounds-checked reading, for the step
// summary codec and the transport's host messages. A reader never reads past its bytes: every
// getter returns false instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

namespace sp::runtime::wire {

inline uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t unzigzag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1u);
}

// Text from another process (a stop reason) as it may be printed: printable ASCII kept,
// backslashes and every other byte as \xNN, cut after `max` bytes of input with "...".
inline std::string printable(std::string_view bytes, size_t max = 200) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c <= 0x7e && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xFu];
    }
  }
  if (bytes.size() > max) out += "...";
  return out;
}

class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}
  void u8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void u16(uint16_t v) { fixed(v, 2); }
  void u32(uint32_t v) { fixed(v, 4); }
  void u64(uint64_t v) { fixed(v, 8); }
  void i32(int32_t v) { fixed(static_cast<uint32_t>(v), 4); }
  void i64(int64_t v) { fixed(static_cast<uint64_t>(v), 8); }
  void varint(uint64_t v) {
    while (v >= 0x80u) {
      out_->push_back(static_cast<char>((v & 0x7Fu) | 0x80u));
      v >>= 7;
    }
    out_->push_back(static_cast<char>(v));
  }
  void svarint(int64_t v) { varint(zigzag(v)); }
  void bytes(std::string_view s) { out_->append(s.data(), s.size()); }
  // u32 length, then the bytes (version 1)
  void str32(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    bytes(s);
  }
  // varint length, then the bytes (version 2)
  void str(std::string_view s) {
    varint(s.size());
    bytes(s);
  }

 private:
  void fixed(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_->push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
  }
  std::string* out_;
};

class Reader {
 public:
  // `base`: where these bytes start in the whole payload, so that errors name a payload offset.
  Reader(std::string_view bytes, size_t base) : bytes_(bytes), base_(base) {}
  size_t remaining() const { return bytes_.size() - pos_; }
  size_t offset() const { return base_ + pos_; }

  bool u8(uint8_t* v) {
    if (remaining() < 1) return false;
    *v = static_cast<uint8_t>(bytes_[pos_++]);
    return true;
  }
  bool u32(uint32_t* v) { return fixed(v, 4); }
  bool u64(uint64_t* v) { return fixed(v, 8); }
  bool i32(int32_t* v) {
    uint32_t u = 0;
    if (!fixed(&u, 4)) return false;
    *v = static_cast<int32_t>(u);
    return true;
  }
  bool i64(int64_t* v) {
    uint64_t u = 0;
    if (!fixed(&u, 8)) return false;
    *v = static_cast<int64_t>(u);
    return true;
  }
  // At most 10 bytes, and the 10th may only carry the top bit: no silent overflow.
  bool varint(uint64_t* v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      uint8_t b = 0;
      if (!u8(&b)) return false;
      if (shift == 63 && (b & 0x7Eu) != 0) return false;
      x |= static_cast<uint64_t>(b & 0x7Fu) << shift;
      if ((b & 0x80u) == 0) {
        *v = x;
        return true;
      }
    }
    return false;
  }
  bool svarint(int64_t* v) {
    uint64_t u = 0;
    if (!varint(&u)) return false;
    *v = unzigzag(u);
    return true;
  }
  // A varint that must fit the (unsigned) target type.
  template <class T>
  bool varint_as(T* v) {
    static_assert(std::is_unsigned_v<T>);
    uint64_t u = 0;
    if (!varint(&u) || u > std::numeric_limits<T>::max()) return false;
    *v = static_cast<T>(u);
    return true;
  }
  bool svarint32(int32_t* v) {
    int64_t s = 0;
    if (!svarint(&s) || s < INT32_MIN || s > INT32_MAX) return false;
    *v = static_cast<int32_t>(s);
    return true;
  }
  bool str32(std::string* s) {
    uint32_t n = 0;
    if (!u32(&n) || n > remaining()) return false;
    return take(n, s);
  }
  bool str(std::string* s) {
    uint64_t n = 0;
    if (!varint(&n) || n > remaining()) return false;
    return take(static_cast<size_t>(n), s);
  }

 private:
  bool take(size_t n, std::string* s) {
    s->assign(bytes_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  template <class U>
  bool fixed(U* v, int n) {
    if (remaining() < static_cast<size_t>(n)) return false;
    uint64_t x = 0;
    for (int i = 0; i < n; ++i) {
      x |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[pos_ + static_cast<size_t>(i)]))
           << (8 * i);
    }
    *v = static_cast<U>(x);
    pos_ += static_cast<size_t>(n);
    return true;
  }
  std::string_view bytes_;
  size_t base_;
  size_t pos_ = 0;
};

}  // namespace sp::runtime::wire
