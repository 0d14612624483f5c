// The transfer time a collective or p2p key has shown it can sustain, as the ideal's reference
// when this step's transfers are significantly slower than that.
//
// Why: a transfer's ideal is the window's median (the paper's rule: flaps would skew a mean),
// which follows a link that turns slow for good within half a window. In a data-parallel job
// every member's all-reduce is slow together (they end together), so nothing in the step says
// that the link is at fault: only the job's own past does. So each key remembers the lowest
// window median it has had (its demonstrated level, with that median's standard error). A step
// is replayed with that level when both the window's median (the link has stayed slow) and the
// step's own level (the step paid for it) are above it beyond the job's step-to-step dispersion
// of the level (the window's robust sd of the per-step levels, taken at the upper end of its
// band while the window has few steps, and the reference's error), at the noise model's level
// alpha over every key (Sidak): the link is then what makes the step slower than its ideal, and
// S says by how much. Otherwise the step keeps the window median, so that a job whose transfers
// merely vary or burst (a shared network, an oversubscribed CPU) is not called slow; a one-step
// burst is the window median's to judge. A window of one step (the job's first) says nothing of
// that dispersion: it is neither a reference nor tested against one.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace sp::online {

class TransferReference {
 public:
  // alpha <= 0: off (the window median always), as with the noise model off.
  explicit TransferReference(double alpha) : alpha_(alpha) {}

  // One key's window this step: its median and each step's own level (the median of that
  // step's transfers), oldest first; `now`: the last level is this step's.
  struct Window {
    double median = 0;
    std::vector<double> levels;
    bool now = false;
    double p = 1;          // ideal()'s test: P(window median and this level | the sustained one), Sidak over the keys
    double sustained = 0;  // the sustained level it was tested against (0: not tested)
  };
  // The key's ideal transfer time this step (and w->p). `keys`: the transfer keys tested.
  double ideal(const std::string& key, Window* w, double keys) const;
  // After an analysed step: the window's median becomes the key's reference if it is lower.
  void remember(const std::string& key, const Window& w);

 private:
  struct Level {
    double log_level = 0, se = 0;  // log of the window median, its standard error
  };
  static double log_sd(const std::vector<double>& levels);
  double alpha_;
  std::map<std::string, Level> best_;
};

}  // namespace sp::online
