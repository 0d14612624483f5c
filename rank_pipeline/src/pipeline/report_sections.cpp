#include "report_sections.h"

#include <cmath>
#include <cstdlib>
#include <string>


namespace sp::rank_pipeline {
namespace {

using json = nlohmann::ordered_json;

constexpr const char* kInactivePrefix = "GPU capture inactive: ";

std::string cupti_report_text(const RuntimeCalls& runtime, uint32_t top_k) {
  const auto report = runtime.cupti_report;
  if (report == nullptr) return {};
  std::string text(report(nullptr, 0, top_k), '\0');
  if (!text.empty()) report(text.data(), text.size() + 1, top_k);
  return text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t end = text.find('\n', begin);
    out.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return out;
}

}  // namespace

json clock_section(const std::vector<RankClock>& rows, std::chrono::milliseconds period) {
  json ranks = json::array();
  int64_t max_offset = 0, max_unc = 0;
  double max_skew = 0;
  for (const RankClock& r : rows) {
    json row = {{"rank", r.rank}, {"estimated", r.known}, {"offset_ns", r.offset_ns},
                {"uncertainty_ns", r.uncertainty_ns}, {"rtt_ns", r.rtt_ns}};
    row["skew_ppm"] = r.skew_ppm ? json(*r.skew_ppm) : json();
    row["estimates"] = r.estimates;
    row["failures"] = r.failures;
    if (!r.error.empty()) row["last_error"] = r.error;
    ranks.push_back(std::move(row));
    max_offset = std::max<int64_t>(max_offset, std::llabs(r.offset_ns));
    max_unc = std::max(max_unc, r.uncertainty_ns);
    if (r.skew_ppm) max_skew = std::max(max_skew, std::fabs(*r.skew_ppm));
  }
  return {{"reference", "rank 0"},
          {"period_s", static_cast<double>(period.count()) / 1e3},
          {"max_abs_offset_ns", max_offset},
          {"max_uncertainty_ns", max_unc},
          {"max_abs_skew_ppm", max_skew},
          {"ranks", std::move(ranks)}};
}

void add_gpu_capture(online::ReportOptions* options, const RuntimeCalls& runtime, int rank,
                     bool with_kernels, uint32_t top_k) {
  json gpu;
  sp_cupti_stats s{};
  s.struct_size = sizeof(s);
  const bool have_stats = runtime.cupti_get_stats != nullptr && runtime.cupti_get_stats(&s) == SP_OK;
  const bool ran = have_stats && (s.active != 0 || s.windows > 0 || s.kernels > 0 || s.memcpys > 0);
  if (!ran) {
    std::string why = "the runtime in use has no GPU capture (libstraggler_probe.so with CUDA is not loaded)";
    if (have_stats) {
      const std::vector<std::string> lines = lines_of(cupti_report_text(runtime, 0));
      why = lines.empty() ? "never started" : lines[0];
      if (why.rfind(kInactivePrefix, 0) == 0) why = why.substr(std::string(kInactivePrefix).size());
    }
    gpu = {{"state", "inactive"}, {"reason", why}};
    options->sections["capture"] = {{"gpu", std::move(gpu)}};
    return;
  }
  gpu = {{"state", s.active ? "active" : "stopped"}, {"cupti_major", s.cupti_major},
         {"kernels", s.kernels}, {"memcpys", s.memcpys},
         {"activities_in_regions", s.tagged_activities},
         {"activities_outside_regions", s.untagged_activities}, {"nccl_kernels", s.nccl_kernels},
         {"dropped_records", s.dropped_records}, {"buffers_refused", s.buffers_refused},
         {"events_emitted", s.events_emitted}, {"pauses", s.pauses}};
  options->sections["capture"] = {{"gpu", std::move(gpu)}};
  if (!with_kernels) return;
  const std::string text = cupti_report_text(runtime, top_k);
  options->sections["gpu_top_kernels"] = {{"rank", rank}, {"top_k", top_k}, {"lines", lines_of(text)}};
  options->files.emplace_back("gpu_kernels_rank" + std::to_string(rank) + ".txt", text);
}

}  // namespace sp::rank_pipeline
