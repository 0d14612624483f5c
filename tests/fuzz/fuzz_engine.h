// A deterministic mutational fuzzer for the decoders that read another process's bytes (g++ has
// no libFuzzer): a seeded PRNG, mutations of valid encodings (bit flips, edge bytes, every
// truncation of short inputs, random truncations, inserted / duplicated / deleted chunks, length
// fields set to huge or zero, concatenations, dictionary tokens) and purely random inputs.
//
// run_cases() feeds each input to a decoder callback, which returns whether the decoder
// accepted it and, when not, its one-line error. Every error is checked: non-empty, one line,
// printable ASCII, bounded, and never the marker token the mutator plants in inputs (an error
// that echoes input bytes shows it). At the end one line per decoder goes to stdout:
//   fuzz: decoder <name>: <cases> cases, <rejected> rejected, <accepted> accepted
// SP_FUZZ_CASES overrides the case count, SP_FUZZ_SEED the seed (tests/fuzz/README.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sp::fuzz {

// Planted by the mutator in inputs (an escape sequence, a word, a byte above 0x7f): an error
// line that contains "FUZZ" echoed the input.
inline constexpr std::string_view kMarker = "\x1b[0mFUZZ\xff";

// splitmix64: small, fast, the same sequence on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [0, n); n > 0.
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
  bool chance(unsigned percent) { return below(100) < percent; }

 private:
  uint64_t state_;
};

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}
  // 1 to 4 stacked mutations of `input`; `others` are concatenated or spliced in at times, and
  // `dictionary` tokens (format magics, the marker) inserted or written over.
  std::string mutate(std::string input, const std::vector<std::string>& others,
                     const std::vector<std::string>& dictionary);
  std::string random_bytes(size_t max_size);
  Rng& rng() { return rng_; }

 private:
  void mutate_once(std::string* s, const std::vector<std::string>& others,
                   const std::vector<std::string>& dictionary);
  Rng rng_;
};

struct Outcome {
  bool accepted = false;
  std::string error;  // when rejected: the decoder's one line
  // Rejected by a decoder that says only "no" (nullopt, false) and leaves the words to its
  // caller: no line to check.
  bool quiet = false;
};

struct Corpus {
  std::vector<std::string> seeds;       // valid encodings from the encoders
  std::vector<std::string> dictionary;  // tokens of the format (kMarker is always added)
  // Applied to most mutated inputs before decoding (e.g. rewrite a checksum so that the
  // mutation reaches the body); null: none.
  std::function<void(std::string*)> fixup;
  // Seeds at most this long have every truncation tried (those cases count toward the total).
  size_t every_truncation_up_to = 512;
};

struct Stats {
  size_t cases = 0, rejected = 0, accepted = 0;
};

// The case count (SP_FUZZ_CASES, default `default_cases`) and seed (SP_FUZZ_SEED, default fixed).
size_t case_count(size_t default_cases = 10000);
uint64_t base_seed();

// Runs `cases` inputs through `decode` (every truncation of each short seed first, then about
// 7% purely random inputs and mutations for the rest), checks every error line, prints the
// decoder's line and returns the counts. `decode` asserts its own properties (round trips).
Stats run_cases(const std::string& name, const Corpus& corpus, size_t cases,
                const std::function<Outcome(const std::string&)>& decode);

// Non-empty, one line, printable ASCII, at most 400 characters, no marker: the checks every
// error (and warning made from bytes of another process) must pass. gtest failures name `what`.
void expect_clean_line(const std::string& line, const std::string& what);
// Printable ASCII only (no control bytes, nothing above 0x7e).
bool printable_ascii(std::string_view text);

}  // namespace sp::fuzz
