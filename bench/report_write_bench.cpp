// What rank 0 pays to keep a report while the job runs (rank_pipeline/src/pipeline/analysis_worker.cpp
// rewrites it, marked partial, after a step at most every kPartialReportEvery and never more often
// than kPartialReportCostFactor times its own cost): the cost of one write of report.json,
// timeline.json and heatmap.svg (online/src/output/report_writer.cpp, each file through a temporary file
// and a rename) for jobs of 64 to 4096 ranks, and what the schedule makes of it.
// report.html (online/src/html_report) is written with report.json; its series are filled to
// their bound (160 columns of every rank's S_w, at most 256 rows), and its own size and the time
// to make it are shown apart.
//
// The report's size depends on the ranks (per-rank worker scores in the totals, dp x pp cells in
// the heatmap) and on the timeline (the last 3 steps' ops on every rank, real and ideal), not on
// how many steps were analysed; the bench builds those inputs directly (48 ops per rank and step:
// forward and backward of 8 micro-batches, their pipeline sends and receives, data wait,
// optimizer, two bucket all-reduces) rather than analysing 4096-rank steps first.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "output/report_writer.h"
#include "pipeline/analysis_worker.h"
#include "straggler_probe/online/html_report.h"

namespace {

using sp::online::ReportOptions;
using sp::online::ReportTotals;
using sp::online::TimelineOp;
using sp::online::TimelineStep;
using Clock = std::chrono::steady_clock;

constexpr int kOpsPerRank = 48;
constexpr int kTimelineSteps = 3;  // OnlineConfig::timeline_steps' default
constexpr int kRuns = 5;
constexpr int kHistorySteps = 400;

struct Job {
  int dp, pp;
};

void fill(const Job& job, ReportTotals* totals, std::deque<TimelineStep>* timeline) {
  const int world = job.dp * job.pp;
  totals->dp_size = job.dp;
  totals->pp_size = job.pp;
  totals->analyzed = totals->closed = totals->worker_steps = 100;
  totals->first_step = 2;
  totals->last_step = 101;
  totals->sum_S = 112.0;
  totals->sum_worker_S.assign(static_cast<size_t>(world), 105.0);
  for (int r = 0; r < world; ++r) {
    totals->rank_dp.push_back(r % job.dp);
    totals->rank_stage.push_back(r / job.dp);
  }
  totals->causes = {{"worker", 80}, {"none", 20}};
  sp::online::StepVerdict v;  // report.html's series, every column used (kHistorySteps > 160)
  v.analyzed = true;
  v.cause = sp::online::Cause::kWorker;
  v.time_s = 1.12;
  v.ideal_s = 1.0;
  for (int s = 0; s < kHistorySteps; ++s) {
    v.step = 2 + s;
    v.S = 1.1 + 0.001 * (s % 7);
    v.worker_S.assign(static_cast<size_t>(world), 1.0);
    for (int r = 0; r < world; ++r) v.worker_S[static_cast<size_t>(r)] += 0.0001 * ((r * 7 + s) % 97);
    totals->history.add(v);
  }
  totals->worst = {{"rank:17", 80}};
  for (int s = 0; s < kTimelineSteps; ++s) {
    TimelineStep step;
    step.step = 99 + s;
    step.rank_dp = totals->rank_dp;
    step.rank_stage = totals->rank_stage;
    step.type_names = {"forward-compute", "backward-compute"};
    for (int r = 0; r < world; ++r) {
      for (int i = 0; i < kOpsPerRank; ++i) {
        const double t = 0.02 * i;
        step.ops.push_back(TimelineOp{r, i % 3 == 0 ? 0 : 1, i % 8 == 7,
                                      t, t + 0.015, t, t + 0.014});
      }
    }
    timeline->push_back(std::move(step));
  }
}

uintmax_t dir_bytes(const std::filesystem::path& dir) {
  uintmax_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.file_size();
  return n;
}

// Median wall time of one write_report_files call, and the directory's size after it.
double median_write_ms(const std::filesystem::path& dir, const ReportTotals& totals,
                       const std::deque<TimelineStep>& timeline, const ReportOptions& options,
                       uintmax_t* bytes) {
  const nlohmann::ordered_json analysis = {{"config", {{"world_size", totals.sum_worker_S.size()}}}};
  std::vector<double> ms;
  for (int i = 0; i < kRuns; ++i) {
    std::filesystem::remove_all(dir);
    const auto t0 = Clock::now();
    const std::string err = sp::online::write_report_files(dir.string(), totals, analysis, timeline, options);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!err.empty()) {
      std::fprintf(stderr, "%s\n", err.c_str());
      std::exit(1);
    }
  }
  *bytes = dir_bytes(dir);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// report.html alone: its size as written, and the median time to make it from report.json and
// the series (the rest of its write is the file's, as for the others).
double median_html_ms(const std::filesystem::path& dir, const ReportTotals& totals, uintmax_t* bytes) {
  std::ifstream f(dir / "report.json");
  std::stringstream text;
  text << f.rdbuf();
  const auto report = nlohmann::ordered_json::parse(text.str());
  *bytes = std::filesystem::file_size(dir / "report.html");
  std::vector<double> ms;
  for (int i = 0; i < kRuns; ++i) {
    const auto t0 = Clock::now();
    const std::string page = sp::online::html_report_page(report, totals.history.to_json());
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (page.empty()) std::exit(1);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

double interval_ms(double cost_ms) {
  const auto cost = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double, std::milli>(cost_ms));
  return std::chrono::duration<double, std::milli>(sp::rank_pipeline::partial_report_interval(cost)).count();
}

}  // namespace

int main() {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "sp_bench_report_write";
  std::printf("| ranks (dp x pp) | report.json + heatmap + report.html | write | every | timeline.json | write | every | analysis thread | report.html | made in |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const Job job : {Job{16, 4}, Job{64, 8}, Job{512, 8}}) {
    ReportTotals totals;
    std::deque<TimelineStep> timeline;
    fill(job, &totals, &timeline);
    ReportOptions partial;
    partial.final = false;
    partial.write_timeline = false;
    uintmax_t small_bytes = 0, all_bytes = 0;
    const double small_ms = median_write_ms(dir, totals, timeline, partial, &small_bytes);
    uintmax_t html_bytes = 0;
    const double html_ms = median_html_ms(dir, totals, &html_bytes);
    partial.write_timeline = true;
    const double all_ms = median_write_ms(dir, totals, timeline, partial, &all_bytes);
    const double timeline_ms = std::max(0.0, all_ms - small_ms);
    const double small_every = interval_ms(small_ms), timeline_every = interval_ms(timeline_ms);
    std::printf("| %d (%d x %d) | %.2f MB | %.1f ms | %.1f s | %.1f MB | %.1f ms | %.1f s | %.2f%% | %.2f MB | %.1f ms |\n",
                job.dp * job.pp, job.dp, job.pp, static_cast<double>(small_bytes) / 1e6, small_ms,
                small_every / 1e3, static_cast<double>(all_bytes - small_bytes) / 1e6, timeline_ms,
                timeline_every / 1e3, 100.0 * (small_ms / small_every + timeline_ms / timeline_every),
                static_cast<double>(html_bytes) / 1e6, html_ms);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
