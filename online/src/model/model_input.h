// The step model's inputs as they arrive (step_model_builder.cpp): each rank's summary checked
// on its own before anything is built from it, the job's layout read from the summaries, and the
// sequence-length annotations parsed. Internal to the online library.
#pragma once

#include <string>
#include <vector>

#include "step_model.h"
#include "straggler_probe/step_summary.h"

namespace sp::online {

// Every summary present (one per rank, in rank order) and sound on its own; false with one
// error line naming the rank and the problem.
bool check_summaries(const std::vector<const runtime::StepSummary*>& by_rank, std::string* error);

// Layout: unknown dp rank means the rank is its own dp rank; unknown stage means no pipeline.
bool read_layout(StepModel* m, const std::vector<const runtime::StepSummary*>& by_rank, std::string* error);

// Parses "512,1024,77" into the sum of lengths and of squared lengths; false when malformed.
bool parse_seq_lens(const std::string& value, double* sum, double* sum_sq);

}  // namespace sp::online
