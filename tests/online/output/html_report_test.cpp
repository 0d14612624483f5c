// report.html's generator (online/src/html_report): the data embedded so that no name can end
// its <script> element, and the series over time bounded however long the run and however many
// ranks, without losing a step or hiding a straggler. The page itself is drawn by a real headless
// Chromium in tests/python/test_html_report.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "output/report_writer.h"
#include "straggler_probe/online/html_report.h"

namespace sp::online {
namespace {

using json = nlohmann::ordered_json;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

const char* const kHostile[] = {"</script><script>alert(1)</script>", "<!--", "</SCRIPT >", "a&b>c",
                                "\xe2\x80\xa8 line separator", "quote \" and \\ backslash"};

TEST(HtmlReport, EmbeddedDataCannotCloseItsScriptAndReadsBackUnchanged) {
  json data = json::object();
  for (const char* s : kHostile) data["names"].push_back(s);
  const std::string text = json_for_script(data);
  EXPECT_EQ(text.find('<'), std::string::npos);
  EXPECT_EQ(text.find('>'), std::string::npos);
  EXPECT_EQ(text.find('&'), std::string::npos);
  EXPECT_TRUE(std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }));
  EXPECT_EQ(json::parse(text), data);
}

TEST(HtmlReport, InvalidUtf8IsReplacedNotThrown) {
  json data = {{"host", std::string("node\xff\xfe-1")}};
  std::string text;
  ASSERT_NO_THROW(text = json_for_script(data));
  EXPECT_NE(text.find("node"), std::string::npos);
  EXPECT_TRUE(json::accept(text));
}

TEST(HtmlReport, PageHasOnlyItsOwnScriptsWhateverTheNames) {
  json report = {{"tool", kHostile[0]}, {"worst", {{kHostile[1], 3}, {kHostile[2], 1}}}};
  const std::string page = html_report_page(report, json());
  EXPECT_EQ(count(page, "<script"), 2u);    // the data, the page's script
  EXPECT_EQ(count(page, "</script"), 2u);
  EXPECT_EQ(count(page, "<!--"), 0u);
  EXPECT_EQ(page.find("alert(1)</"), std::string::npos);
  EXPECT_EQ(page.rfind("http://", page.find("<script>")), std::string::npos);  // nothing fetched
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);
}

StepVerdict step(int64_t n, double S, size_t world, int slow_rank) {
  StepVerdict v;
  v.step = n;
  v.analyzed = true;
  v.S = S;
  v.time_s = 2.0 * S;
  v.ideal_s = 2.0;
  v.cause = slow_rank >= 0 ? Cause::kWorker : Cause::kNone;
  v.worker_S.assign(world, 1.0);
  v.dp_size = static_cast<int>(world);  // one stage: rank r is dp rank r
  v.rank_stage.assign(world, 0);
  for (size_t r = 0; r < world; ++r) v.rank_dp.push_back(static_cast<int>(r));
  if (slow_rank >= 0) v.worker_S[static_cast<size_t>(slow_rank)] = S;
  return v;
}

TEST(HtmlReport, HistoryOfALongRunStaysBoundedAndCoversEveryStep) {
  html_report::StepHistory h;
  const int64_t steps = 10'000;
  for (int64_t n = 0; n < steps; ++n) h.add(step(n, n % 2 ? 1.5 : 1.1, 8, n % 2 ? 3 : -1));
  EXPECT_LE(h.columns(), html_report::kMaxColumns);
  EXPECT_GE(h.columns(), html_report::kMaxColumns / 2);
  const json j = h.to_json();
  const json& c = j["columns"];
  EXPECT_EQ(c["first"].front(), 0);
  EXPECT_EQ(c["last"].back(), steps - 1);
  uint64_t analysed = 0;
  for (const auto& n : c["analyzed"]) analysed += n.get<uint64_t>();
  EXPECT_EQ(analysed, static_cast<uint64_t>(steps));
  for (size_t i = 0; i + 1 < c["first"].size(); ++i) {
    EXPECT_EQ(c["last"][i].get<int64_t>() + 1, c["first"][i + 1].get<int64_t>());  // no gap, no overlap
  }
  // A column is the mean of its steps, not a sample: half at 1.1, half at 1.5.
  EXPECT_NEAR(c["S"][0].get<double>(), 1.3, 1e-9);
  EXPECT_NEAR(c["S_max"][0].get<double>(), 1.5, 1e-9);
  EXPECT_EQ(c["causes"]["worker"][0].get<int>() + c["causes"]["none"][0].get<int>(),
            c["analyzed"][0].get<int>());
  EXPECT_NEAR(j["heatmap"]["values"][0][3].get<double>(), 1.25, 1e-9);  // rank 3: 1.5 half the time
  EXPECT_NEAR(j["heatmap"]["values"][0][2].get<double>(), 1.0, 1e-9);
}

TEST(HtmlReport, ManyRanksAreGroupedAndTheSlowOneStillShows) {
  html_report::StepHistory h;
  const size_t world = 4096;
  for (int64_t n = 0; n < 5; ++n) h.add(step(n, 1.4, world, 2049));
  const json j = h.to_json();
  const size_t rows = j["heatmap"]["rows"].get<size_t>();
  const size_t per = j["heatmap"]["ranks_per_row"].get<size_t>();
  EXPECT_LE(rows, html_report::kMaxRows);
  EXPECT_GE(rows * per, world);
  const json& col = j["heatmap"]["values"][0];
  ASSERT_EQ(col.size(), rows);
  EXPECT_NEAR(col[2049 / per].get<double>(), 1.4, 1e-9);  // the block's slowest rank
  EXPECT_NEAR(col[0].get<double>(), 1.0, 1e-9);
}

TEST(HtmlReport, ANewLayoutDropsTheOldHeatmapColumnsButKeepsTheSeries) {
  html_report::StepHistory h;
  h.add(step(0, 1.2, 4, 1));
  h.add(step(1, 1.2, 8, 5));
  const json j = h.to_json();
  EXPECT_EQ(j["heatmap"]["ranks"], 8);
  EXPECT_TRUE(j["heatmap"]["values"][0].is_null());
  EXPECT_EQ(j["heatmap"]["values"][1].size(), 8u);
  EXPECT_EQ(j["columns"]["S"].size(), 2u);
}

TEST(HtmlReport, SkippedStepsCountAsClosedWithoutValues) {
  html_report::StepHistory h;
  StepVerdict skipped;
  skipped.step = 7;
  h.add(skipped);
  const json j = h.to_json();
  EXPECT_EQ(j["columns"]["first"][0], 7);
  EXPECT_EQ(j["columns"]["analyzed"][0], 0);
  EXPECT_TRUE(j["columns"]["S"][0].is_null());
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The data a written report.html carries.
json embedded(const std::filesystem::path& page) {
  const std::string text = slurp(page);
  const std::string open = "<script type=\"application/json\" id=\"sp-data\">";
  const size_t at = text.find(open);
  if (at == std::string::npos) return json();
  const size_t from = at + open.size();
  return json::parse(text.substr(from, text.find("</script>", from) - from));
}

TEST(HtmlReport, WrittenByTheReportWriterPartialWhileTheJobRunsThenFinal) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("sp_html_report_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ReportTotals totals;
  for (int64_t n = 0; n < 5; ++n) totals.add(step(n, 1.3, 4, 2));
  ReportOptions options;
  options.final = false;
  ASSERT_EQ(write_report_files(dir.string(), totals, json::object(), {}, options), "");
  json data = embedded(dir / "report.html");
  EXPECT_EQ(data["report"]["run"]["complete"], false);
  EXPECT_EQ(data["report"]["run"], json::parse(slurp(dir / "report.json"))["run"]);  // the same steps
  EXPECT_EQ(data["history"]["columns"]["first"].size(), 5u);
  for (int64_t n = 5; n < 8; ++n) totals.add(step(n, 1.3, 4, 2));
  options.final = true;
  ASSERT_EQ(write_report_files(dir.string(), totals, json::object(), {}, options), "");
  data = embedded(dir / "report.html");
  EXPECT_EQ(data["report"]["run"]["complete"], true);
  EXPECT_EQ(data["report"]["run"]["last_step"], 7);
  EXPECT_EQ(data["history"]["heatmap"]["values"][7][2], 1.3);
  for (const auto& e : fs::directory_iterator(dir)) {  // written through a temporary file and a rename
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sp::online
