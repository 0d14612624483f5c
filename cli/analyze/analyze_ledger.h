// `analyze`'s ledger (issue 25): what the traced job lost, as the live analysis's report.json
// "lost" section says it (online/src/output/ledger.h), from the offline analysis's result.
//
// Per analysed step the loss is (traced step time - ideal step time) x the job's GPU count
// (meta.yaml's world_size). The offline analysis names no cause and no culprit per step, so the
// whole loss is `unattributed` by cause; what it has are two what-ifs over the run: fixing only
// the last stage (M_S) and fixing only the top workers (M_W), each in GPU-seconds given back
// ((mean no-delay step - mean step with them fixed) x steps x GPUs). The last stage is charged
// its share in by_stage, a single top worker its share in top_ranks (several are fixed together,
// and their joint share is not split among them); fixable_gpu_seconds is the larger of the two
// (fixing both together is not a scenario the analysis runs); each charged at most the loss (a
// heavier last stage's M_S exceeds 1: ST's 1.22). Both are under "what_if" as computed.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "straggler_probe/whatif/analysis.h"

namespace sp::cli {

nlohmann::ordered_json offline_ledger_json(const whatif::AnalysisResult& r, const whatif::SlowdownExplanation& ms,
                                           const std::optional<whatif::SlowdownExplanation>& mw);

// "lost 12.3% of GPU time (0.05 of 0.40 GPU-h, 32 steps, 8 GPUs); fixing the last stage (3)
// gives back 8.1%, the top workers (rank 7) 2.0%".
std::string offline_ledger_line(const nlohmann::ordered_json& lost);

}  // namespace sp::cli
