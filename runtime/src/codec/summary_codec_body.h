// The body encodings of a step summary, one per wire version (summary_codec.cpp frames them:
// magic, version, flags, size, CRC-32). Each decoder checks every count against the bytes left
// before it allocates and returns one line saying what is wrong, or "" when the body is whole.
#pragma once

#include <string>
#include <string_view>

#include "straggler_probe/step_summary.h"

namespace sp::runtime::codec {

// Version 1 (written until the compact version 2; still read: persisted .spsum files hold it).
std::string decode_body_v1(std::string_view body, size_t base, StepSummary* out);

// Version 2, the compact one (written until version 3; still read).
std::string decode_body_v2(std::string_view body, size_t base, StepSummary* out);
// Version 3: version 2's body and the step's CPU time. `name_shift` is 1 when s.names lacks the
// leading "" (every non-zero name_id then moves up by one so that id 0 keeps meaning "no name").
void encode_body_v3(const StepSummary& s, uint32_t name_shift, std::string* body);
std::string decode_body_v3(std::string_view body, size_t base, StepSummary* out);

}  // namespace sp::runtime::codec
