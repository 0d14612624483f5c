// Numbers as people read them in reports and log lines: the engine's reports and the online
// analysis's per-step lines print them the same way.
#pragma once

#include <cstdio>
#include <string>

namespace sp::whatif {

// Fixed-point text of `v` with `decimals` digits after the point ("%.*f").
inline std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace sp::whatif
