// The per-worker slowdown heatmap (the paper's Fig. 14) as a self-contained SVG.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace sp::whatif {

struct HeatmapInput {
  std::string trial_name;
  double slowdown = 1.0;  // the job's S, shown in the title
  int dp_size = 1;        // columns (x = dp rank)
  int pp_size = 1;        // rows (y = stage, stage 0 on top as in the paper)
  // S_w per worker, index stage * dp_size + dp_rank. Empty when the attribution was not
  // computed (S below the threshold): the grid is then drawn grey with a note.
  std::vector<double> worker_slowdown;
};

// Writes the SVG. Colours follow a white-to-dark-red ramp from 1.0 up to
// max(1.5, largest S_w) (the paper fixes 1.0-1.5; a wider range keeps big outliers readable);
// cell values are printed when cells are wide enough to hold them. Each worker is one
// <rect class="cell"> carrying data-dp, data-stage and data-sw attributes and a <title> tooltip.
void write_heatmap_svg(const HeatmapInput& in, std::ostream& out);

}  // namespace sp::whatif
