// The CLI's exit codes and its "bad input" error.
#pragma once

#include <stdexcept>

namespace sp::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;  // a bug or an environment failure (disk full, no pyarrow)
inline constexpr int kExitBadInput = 2;  // the user's input is wrong: fix it and rerun

// Bad input that is not a TraceError (a bad option value, an unusable --out path). Its what()
// is the whole one-line message.
class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace sp::cli
