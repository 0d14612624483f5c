// The S_w heatmap SVG: one cell per worker, values, escaping, and the no-attribution case.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>

#include "straggler_probe/whatif/report_heatmap.h"

namespace sp::whatif {
namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

std::string svg(const HeatmapInput& in) {
  std::ostringstream os;
  write_heatmap_svg(in, os);
  return os.str();
}

TEST(Heatmap, DrawsOneCellPerWorkerWithItsValue) {
  HeatmapInput in{"ST", 1.1787, 2, 4, {}};
  for (int s = 0; s < 4; ++s) {
    for (int d = 0; d < 2; ++d) in.worker_slowdown.push_back(s == 3 ? 1.23 + 0.01 * d : 0.99);
  }
  const std::string out = svg(in);
  EXPECT_EQ(count(out, "<rect class=\"cell\""), 8u);
  EXPECT_NE(out.find("data-dp=\"1\" data-stage=\"3\" data-sw=\"1.240000\""), std::string::npos);
  EXPECT_NE(out.find(">1.24</text>"), std::string::npos);  // small grid: values printed
  EXPECT_NE(out.find("ST: per-worker slowdown S_w (S = 1.179)"), std::string::npos);
  EXPECT_EQ(out.rfind("</svg>\n"), out.size() - 7);
}

TEST(Heatmap, LargeGridsDropCellTextButKeepEveryCell) {
  HeatmapInput in{"big", 1.5, 64, 8, std::vector<double>(64 * 8, 1.2)};
  const std::string out = svg(in);
  EXPECT_EQ(count(out, "<rect class=\"cell\""), 512u);
  EXPECT_EQ(out.find(">1.20</text>"), std::string::npos);
}

TEST(Heatmap, EscapesTheTrialName) {
  const std::string out = svg({"a<b>&\"c\"", 1.0, 1, 1, {1.0}});
  EXPECT_NE(out.find("a&lt;b&gt;&amp;&quot;c&quot;: per-worker"), std::string::npos);
}

TEST(Heatmap, WithoutAttributionDrawsGreyCellsAndSaysWhy) {
  const std::string out = svg({"T", 1.02, 3, 2, {}});
  EXPECT_EQ(count(out, "<rect class=\"cell\""), 6u);
  EXPECT_EQ(count(out, "fill=\"#dddddd\""), 6u);
  EXPECT_NE(out.find("attribution not computed"), std::string::npos);
}

TEST(Heatmap, ColourRampGoesFromPaleToDarkRed) {
  const std::string out = svg({"T", 1.3, 2, 1, {1.0, 1.5}});
  EXPECT_NE(out.find("data-sw=\"1.000000\" x=\"70.0\" y=\"110.0\" width=\"48.0\" height=\"48.0\" fill=\"#fff5f0\""),
            std::string::npos);
  EXPECT_NE(out.find("fill=\"#67000d\""), std::string::npos);
}

}  // namespace
}  // namespace sp::whatif
