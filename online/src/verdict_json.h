// A StepVerdict as one JSON object (the JSONL file has one per line).
#pragma once

#include <nlohmann/json.hpp>

#include "straggler_probe/online/verdict.h"

namespace sp::online {

nlohmann::ordered_json verdict_to_json(const StepVerdict& v);

}  // namespace sp::online
