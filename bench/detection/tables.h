// The benchmark's Markdown: one row per cell, and the confusion matrix (true cause x named
// cause, in steps) summed over cells.
#pragma once

#include <string>
#include <vector>

#include "score.h"

namespace sp::bench::detection {

std::string score_table(const std::vector<CellScore>& cells);
std::string confusion_table(const std::vector<CellScore>& cells);
// What the columns mean, printed under the tables.
std::string table_legend();

}  // namespace sp::bench::detection
