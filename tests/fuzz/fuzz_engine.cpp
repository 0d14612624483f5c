#include "fuzz_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace sp::fuzz {
namespace {

constexpr uint8_t kEdgeBytes[] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0xfe};
// Fixed-width length fields set to huge or zero (little-endian, as every format here is).
constexpr uint64_t kEdgeWords[] = {0,          1,          0x7f,       0x80,       0xffff,
                                   0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ull,
                                   0x7fffffffffffffffull, 0xffffffffffffffffull};
// LEB128 varints at their edges: the longest legal (2^64 - 1), one that overflows, one that
// never ends, huge counts, zero written long.
const std::string kEdgeVarints[] = {
    std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10),
    std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10),
    std::string("\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 12),
    std::string("\xff\xff\xff\xff\x0f", 5),
    std::string("\x80\x80\x80\x80\x00", 5),
    std::string("\xff\xff\xff\x7f", 4),
    std::string("\x00", 1),
};

size_t env_size(const char* name, size_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return static_cast<size_t>(std::strtoull(v, nullptr, 10));
}

uint64_t name_hash(const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: each decoder its own stream
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

}  // namespace

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string Mutator::random_bytes(size_t max_size) {
  std::string out(rng_.below(max_size + 1), '\0');
  for (char& c : out) c = static_cast<char>(rng_.next());
  return out;
}

std::string Mutator::mutate(std::string input, const std::vector<std::string>& others,
                            const std::vector<std::string>& dictionary) {
  const size_t n = 1 + rng_.below(4);
  for (size_t i = 0; i < n; ++i) mutate_once(&input, others, dictionary);
  return input;
}

void Mutator::mutate_once(std::string* s, const std::vector<std::string>& others,
                          const std::vector<std::string>& dictionary) {
  const size_t size = s->size();
  const auto at = [&](size_t extra = 0) { return rng_.below(size + extra); };
  switch (rng_.below(12)) {
    case 0:  // bit flips
      if (size == 0) break;
      for (size_t k = 1 + rng_.below(4); k > 0; --k) {
        char& c = (*s)[at()];
        c = static_cast<char>(static_cast<unsigned char>(c) ^ (1u << rng_.below(8)));
      }
      break;
    case 1:  // a byte set to an edge value
      if (size != 0) (*s)[at()] = static_cast<char>(kEdgeBytes[rng_.below(sizeof kEdgeBytes)]);
      break;
    case 2:  // random truncation
      s->resize(at(1));
      break;
    case 3: {  // random bytes inserted
      const std::string chunk = random_bytes(16);
      s->insert(at(1), chunk);
      break;
    }
    case 4: {  // a chunk duplicated elsewhere
      if (size == 0) break;
      const size_t from = at(), len = 1 + rng_.below(std::min<size_t>(size - from, 64));
      const std::string chunk = s->substr(from, len);
      s->insert(at(1), chunk);
      break;
    }
    case 5: {  // a chunk deleted
      if (size == 0) break;
      const size_t from = at();
      s->erase(from, 1 + rng_.below(std::min<size_t>(size - from, 32)));
      break;
    }
    case 6: {  // a fixed-width length field set to huge / zero
      const size_t width = rng_.chance(50) ? 4 : 8;
      if (size < width) break;
      const uint64_t v = kEdgeWords[rng_.below(std::size(kEdgeWords))];
      const size_t pos = rng_.below(size - width + 1);
      for (size_t i = 0; i < width; ++i) (*s)[pos + i] = static_cast<char>(v >> (8 * i));
      break;
    }
    case 7: {  // a varint at its edge, replacing a byte or inserted
      const std::string& v = kEdgeVarints[rng_.below(std::size(kEdgeVarints))];
      const size_t pos = at(1);
      if (rng_.chance(50) && pos < size) s->erase(pos, 1);
      s->insert(std::min(pos, s->size()), v);
      break;
    }
    case 8: {  // a dictionary token inserted or written over
      if (dictionary.empty()) break;
      const std::string& t = dictionary[rng_.below(dictionary.size())];
      const size_t pos = at(1);
      if (rng_.chance(50)) {
        s->insert(pos, t);
      } else {
        s->replace(pos, std::min(t.size(), size - pos), t);
      }
      break;
    }
    case 9:  // concatenated with another input (or itself)
      s->append(others.empty() || rng_.chance(30) ? std::string(*s) : others[rng_.below(others.size())]);
      break;
    case 10: {  // spliced: this input's head, another input's tail
      if (others.empty()) break;
      const std::string& o = others[rng_.below(others.size())];
      *s = s->substr(0, at(1)) + o.substr(rng_.below(o.size() + 1));
      break;
    }
    default: {  // a run of bytes overwritten with one edge value
      if (size == 0) break;
      const size_t from = at(), len = 1 + rng_.below(std::min<size_t>(size - from, 16));
      std::fill_n(s->begin() + static_cast<std::ptrdiff_t>(from), len,
                  static_cast<char>(kEdgeBytes[rng_.below(sizeof kEdgeBytes)]));
      break;
    }
  }
}

size_t case_count(size_t default_cases) { return env_size("SP_FUZZ_CASES", default_cases); }
uint64_t base_seed() { return env_size("SP_FUZZ_SEED", 20260026); }

bool printable_ascii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

void expect_clean_line(const std::string& line, const std::string& what) {
  EXPECT_FALSE(line.empty()) << what << ": an empty error";
  EXPECT_LE(line.size(), 400u) << what << ": " << line.substr(0, 200);
  EXPECT_TRUE(printable_ascii(line)) << what << ": not printable ASCII (input bytes echoed?)";
  EXPECT_EQ(line.find("FUZZ"), std::string::npos) << what << ": echoes the input: " << line;
}

Stats run_cases(const std::string& name, const Corpus& corpus, size_t cases,
                const std::function<Outcome(const std::string&)>& decode) {
  Mutator m(base_seed() ^ name_hash(name));
  std::vector<std::string> dictionary = corpus.dictionary;
  dictionary.emplace_back(kMarker);
  Stats st;
  const auto started = std::chrono::steady_clock::now();
  const auto failed = [] {
    return ::testing::UnitTest::GetInstance()->current_test_info()->result()->Failed();
  };
  auto one = [&](std::string input, bool fix) {
    if (fix && corpus.fixup) corpus.fixup(&input);
    const Outcome o = decode(input);
    ++st.cases;
    if (o.accepted) {
      ++st.accepted;
    } else {
      ++st.rejected;
      if (!o.quiet) expect_clean_line(o.error, name + " case " + std::to_string(st.cases));
    }
  };
  // Every truncation of each short seed (checksums left as they are: a cut is seen as such).
  for (const std::string& seed : corpus.seeds) {
    if (seed.size() > corpus.every_truncation_up_to) continue;
    for (size_t len = 0; len < seed.size() && st.cases < cases / 2; ++len) one(seed.substr(0, len), false);
  }
  // Stops early once this decoder fails: one bad input is enough to see, not 10,000.
  while (st.cases < cases && !failed()) {
    if (m.rng().below(100) < 7) {
      one(m.random_bytes(m.rng().chance(80) ? 64 : 1024), false);
      continue;
    }
    const std::string& seed = corpus.seeds[m.rng().below(corpus.seeds.size())];
    std::string input = m.mutate(seed, corpus.seeds, dictionary);
    const bool fix = m.rng().chance(85);
    one(std::move(input), fix);
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("fuzz: decoder %s: %zu cases, %zu rejected, %zu accepted (%.2f s)\n", name.c_str(),
              st.cases, st.rejected, st.accepted, secs);
  std::fflush(stdout);
  return st;
}

}  // namespace sp::fuzz
