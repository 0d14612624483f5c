// SVG heatmap of S_w over (dp rank, stage). Hand-written SVG: no plotting dependency, and the
// file opens in any browser.
#include "straggler_probe/whatif/report_heatmap.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>

#include "straggler_probe/whatif/number_text.h"

namespace sp::whatif {
namespace {

struct Rgb {
  double r, g, b;
};

// Stops of matplotlib's "Reds" ramp (the paper's colour map), evenly spaced over [0, 1].
constexpr std::array<Rgb, 5> kReds = {{{255, 245, 240}, {252, 187, 161}, {251, 106, 74}, {203, 24, 29}, {103, 0, 13}}};

Rgb ramp(double t) {
  t = std::clamp(t, 0.0, 1.0) * (kReds.size() - 1);
  const size_t i = std::min(static_cast<size_t>(t), kReds.size() - 2);
  const double f = t - static_cast<double>(i);
  const Rgb& a = kReds[i];
  const Rgb& b = kReds[i + 1];
  return {a.r + (b.r - a.r) * f, a.g + (b.g - a.g) * f, a.b + (b.b - a.b) * f};
}

std::string hex(const Rgb& c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(std::lround(c.r)), static_cast<int>(std::lround(c.g)),
                static_cast<int>(std::lround(c.b)));
  return buf;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters are not allowed in XML 1.0 text.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out += c;
    }
  }
  return out;
}

// Label every k-th rank so tick labels never overlap (about 16 px each at the minimum).
int tick_stride(double cell) {
  int k = 1;
  while (cell * k < 16) k *= 2;
  return k;
}

}  // namespace

void write_heatmap_svg(const HeatmapInput& in, std::ostream& out) {
  const int nx = std::max(in.dp_size, 1);
  const int ny = std::max(in.pp_size, 1);
  const bool have_values = in.worker_slowdown.size() == static_cast<size_t>(nx) * ny;
  // Cells are square, 48 px at most, and the grid stays within about 1400 px wide.
  const double cell = std::clamp(std::min(1400.0 / nx, 600.0 / ny), 4.0, 48.0);
  const bool annotate = have_values && cell >= 30;
  const double left = 70, top = 110, grid_w = cell * nx, grid_h = cell * ny;
  // Wide enough for the title too (about 9.5 px per character of 16 px bold text).
  const double title_w = 9.5 * static_cast<double>(in.trial_name.size() + 45);
  const double width = std::max({left + grid_w + 30, left + title_w, 420.0}), height = top + grid_h + 60;

  double vmax = 1.5;
  if (have_values) {
    for (const double v : in.worker_slowdown) vmax = std::max(vmax, std::ceil(v * 10) / 10);
  }
  const double vmin = 1.0;
  auto colour_of = [&](double v) { return hex(ramp((v - vmin) / (vmax - vmin))); };

  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << fixed(width, 0) << "\" height=\"" << fixed(height, 0)
      << "\" viewBox=\"0 0 " << fixed(width, 0) << ' ' << fixed(height, 0)
      << "\" font-family=\"Helvetica, Arial, sans-serif\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out << "<text x=\"" << fixed(left, 0) << "\" y=\"24\" font-size=\"16\" font-weight=\"bold\">"
      << xml_escape(in.trial_name) << ": per-worker slowdown S_w (S = " << fixed(in.slowdown, 3) << ")</text>\n";

  // Colour bar on top, as in the paper's figure.
  const double bar_w = std::min(std::max(grid_w, 240.0), 400.0);
  out << "<defs><linearGradient id=\"ramp\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\">";
  for (size_t i = 0; i < kReds.size(); ++i) {
    out << "<stop offset=\"" << fixed(static_cast<double>(i) / (kReds.size() - 1), 2) << "\" stop-color=\"" << hex(kReds[i])
        << "\"/>";
  }
  out << "</linearGradient></defs>\n";
  out << "<g class=\"legend\"><rect x=\"" << fixed(left, 0) << "\" y=\"44\" width=\"" << fixed(bar_w, 1)
      << "\" height=\"14\" fill=\"url(#ramp)\" stroke=\"#888\" stroke-width=\"0.5\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double v = vmin + (vmax - vmin) * i / 4;
    out << "<text x=\"" << fixed(left + bar_w * i / 4, 1) << "\" y=\"74\" font-size=\"11\" text-anchor=\"middle\">"
        << fixed(v, 2) << (i == 4 ? "+" : "") << "</text>\n";
  }
  out << "</g>\n";
  if (!have_values) {
    out << "<text x=\"" << fixed(left, 0) << "\" y=\"96\" font-size=\"12\" fill=\"#555\">"
        << "attribution not computed (slowdown below the threshold): no per-worker values</text>\n";
  }

  out << "<g class=\"grid\">\n";
  for (int s = 0; s < ny; ++s) {
    for (int d = 0; d < nx; ++d) {
      const double x = left + d * cell, y = top + s * cell;
      const double v = have_values ? in.worker_slowdown[static_cast<size_t>(s) * nx + d] : std::nan("");
      out << "<rect class=\"cell\" data-dp=\"" << d << "\" data-stage=\"" << s << "\"";
      if (have_values) out << " data-sw=\"" << fixed(v, 6) << "\"";
      out << " x=\"" << fixed(x, 1) << "\" y=\"" << fixed(y, 1) << "\" width=\"" << fixed(cell, 1) << "\" height=\""
          << fixed(cell, 1) << "\" fill=\"" << (have_values ? colour_of(v) : std::string("#dddddd"))
          << "\" stroke=\"white\" stroke-width=\"0.5\"><title>dp rank " << d << ", stage " << s;
      if (have_values) out << ": S_w = " << fixed(v, 4);
      out << "</title></rect>\n";
      if (annotate) {
        const bool dark = (v - vmin) / (vmax - vmin) > 0.55;
        out << "<text x=\"" << fixed(x + cell / 2, 1) << "\" y=\"" << fixed(y + cell / 2 + 4, 1)
            << "\" font-size=\"11\" text-anchor=\"middle\" fill=\"" << (dark ? "white" : "black") << "\">" << fixed(v, 2)
            << "</text>\n";
      }
    }
  }
  out << "</g>\n";

  // Axes: dp ranks along the bottom, stages down the left.
  out << "<g class=\"axes\" font-size=\"11\">\n";
  const int kx = tick_stride(cell);
  for (int d = 0; d < nx; d += kx) {
    out << "<text x=\"" << fixed(left + (d + 0.5) * cell, 1) << "\" y=\"" << fixed(top + grid_h + 14, 1)
        << "\" text-anchor=\"middle\">" << d << "</text>\n";
  }
  const int ky = tick_stride(cell);
  for (int s = 0; s < ny; s += ky) {
    out << "<text x=\"" << fixed(left - 6, 1) << "\" y=\"" << fixed(top + (s + 0.5) * cell + 4, 1)
        << "\" text-anchor=\"end\">" << s << "</text>\n";
  }
  out << "<text x=\"" << fixed(left + grid_w / 2, 1) << "\" y=\"" << fixed(top + grid_h + 34, 1)
      << "\" font-size=\"12\" text-anchor=\"middle\">DP rank</text>\n";
  out << "<text transform=\"translate(" << fixed(left - 40, 1) << ',' << fixed(top + grid_h / 2, 1)
      << ") rotate(-90)\" font-size=\"12\" text-anchor=\"middle\">PP rank (stage)</text>\n";
  out << "</g>\n</svg>\n";
}

}  // namespace sp::whatif
