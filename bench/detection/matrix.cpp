#include "matrix.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>
#include <stdexcept>

namespace sp::bench::detection {
namespace {

using online::testing::Fault;
using online::testing::FaultKind;
using online::testing::NoiseModel;
using online::testing::NoisyScenario;

struct Shape {
  std::string name;
  int dp = 1, pp = 1, microbatches = 1;
};

// Data-parallel: every rank one replica, 4 micro-batches of gradient accumulation. Pipeline: 4
// stages (2 at 4 ranks), GPipe, 8 micro-batches.
Shape make_shape(const std::string& kind, int ranks) {
  if (kind == "dp") return {"dp" + std::to_string(ranks), ranks, 1, 4};
  if (kind != "pp") throw std::invalid_argument("unknown shape '" + kind + "' (dp or pp)");
  const int pp = ranks >= 16 ? 4 : 2;
  if (ranks % pp != 0) throw std::invalid_argument("pp shape needs ranks divisible by " + std::to_string(pp));
  return {"dp" + std::to_string(ranks / pp) + "xpp" + std::to_string(pp), ranks / pp, pp, ranks >= 16 ? 8 : 4};
}

std::string clean_name(double jitter) {
  std::ostringstream o;
  o << "clean-j" << std::setprecision(3) << jitter * 100;
  return o.str();
}

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The culprits: ranks drawn from the seed (never a fixed rank such as 0), two distinct ones;
// `below` limits the draw (a p2p link starts before the last stage).
int culprit(uint64_t seed, int which, int below) {
  return static_cast<int>(mix(seed * 31 + static_cast<uint64_t>(which)) % static_cast<uint64_t>(below));
}

std::vector<Fault> faults_of(const std::string& scenario, const Shape& sh, const MatrixOptions& o) {
  const int world = sh.dp * sh.pp;
  const online::testing::SyntheticJob base;
  // A pause of a fifth of the step's compute, so that the step is clearly slower.
  const double nominal = sh.microbatches * (base.forward_s + base.backward_s) + base.optimizer_s;
  const double pause = 0.2 * nominal;
  const int a = culprit(o.seed, 0, world);
  int b = culprit(o.seed, 1, world);
  if (b == a) b = (a + 1) % world;
  auto at = [&](Fault f) {
    f.onset = o.onset;
    return f;
  };
  if (scenario == "slow-5") return {at({FaultKind::kSlowRank, a, 0.05})};
  if (scenario == "slow-10") return {at({FaultKind::kSlowRank, a, 0.10})};
  if (scenario == "slow-30") return {at({FaultKind::kSlowRank, a, 0.30})};
  if (scenario == "slow-4-shift") return {at({FaultKind::kSlowRank, a, 0.04})};
  if (scenario == "intermittent") return {at({FaultKind::kSlowRank, a, 0.30, 0, 0, 4})};
  if (scenario == "gc") return {at({FaultKind::kGcPauses, a, 0, pause, 0, 5})};
  if (scenario == "seq-lens") return {at({FaultKind::kSeqLens})};
  if (scenario == "heavy-last-stage") return {at({FaultKind::kHeavyLastStage, 0, 0.3})};
  if (scenario == "slow-link") {
    // Transfers 5x longer: one rank's collectives, or one p2p link between two stages.
    const int r = sh.pp > 1 ? culprit(o.seed, 2, world - sh.dp) : a;
    return {at({FaultKind::kSlowLink, r, 4.0})};
  }
  if (scenario == "data-stall") {
    // In a pipeline only the first stage loads data (a later stage's wait would fall in its
    // bubble and slow nothing).
    const int r = sh.pp > 1 ? culprit(o.seed, 3, sh.dp) : a;
    return {at({FaultKind::kDataStall, r, 0, pause, 0, 3})};
  }
  if (scenario == "two-causes") {
    return {at({FaultKind::kSlowRank, a, 0.10}), at({FaultKind::kGcPauses, b, 0, pause, 0, 4})};
  }
  throw std::invalid_argument("unknown scenario '" + scenario + "'");
}

bool needs_pipeline(const std::string& scenario) { return scenario == "heavy-last-stage"; }

// The scenarios whose noise moves work between a micro-batch's forward and backward
// (NoiseModel::fb_shift): the per-op jitter the analysis learns is then several times wider
// than how much ranks differ, so a rank a few percent slow is within each step's jitter, yet
// it is the slowest on nearly every step. Their clean twin is `clean-shift`. The share: up to
// 90% of the forward's time (a forward that shows from a tenth to nearly twice its work).
// Data-parallel only: in a pipeline a micro-batch's forward and backward are apart (the bubble
// between them), so work moved from one to the other moves the step's critical path (the
// clean job's S 1.17 at dp2xpp2): real jitter there, not how it was timed.
constexpr double kShiftedShare = 0.9;
bool is_shifted(const std::string& scenario) { return scenario.size() > 6 && scenario.ends_with("-shift"); }

int steps_for(const MatrixOptions& o, size_t size_index) {
  if (o.steps.empty()) throw std::invalid_argument("no step counts given");
  return o.steps[std::min(size_index, o.steps.size() - 1)];
}

}  // namespace

const std::vector<std::string>& scenario_names() {
  static const std::vector<std::string> names = {
      "slow-5", "slow-10", "slow-30", "intermittent", "gc", "seq-lens", "heavy-last-stage",
      "slow-link", "data-stall", "two-causes"};
  return names;
}

std::vector<Cell> build_matrix(const MatrixOptions& o) {
  std::vector<std::string> wanted = o.scenarios.empty() ? scenario_names() : o.scenarios;
  for (const std::string& s : wanted) {
    if (s.rfind("clean", 0) != 0) faults_of(s, make_shape("dp", 4), o);  // unknown names throw here
  }
  std::vector<double> cleans = o.clean_jitters;
  if (!o.full && std::find(cleans.begin(), cleans.end(), o.jitter) == cleans.end()) cleans.push_back(o.jitter);
  std::vector<Cell> cells;
  for (size_t si = 0; si < o.sizes.size(); ++si) {
    for (const std::string& kind : o.shapes) {
      const Shape sh = make_shape(kind, o.sizes[si]);
      auto make = [&](const std::string& scenario, double jitter, std::vector<Fault> faults, bool shifted = false) {
        Cell c;
        c.shape = sh.name;
        c.scenario = scenario;
        c.name = sh.name + "/" + scenario;
        c.ranks = sh.dp * sh.pp;
        c.jitter = jitter;
        c.job.job.dp = sh.dp;
        c.job.job.pp = sh.pp;
        c.job.job.microbatches = sh.microbatches;
        c.job.noise = NoiseModel::with_jitter(jitter);
        if (shifted) c.job.noise.fb_shift = kShiftedShare;
        c.job.faults = std::move(faults);
        c.job.steps = o.full ? o.full_steps : steps_for(o, si);
        c.job.seed = o.seed;
        c.job.cpu_times = o.cpu_times;
        if (!c.job.faults.empty()) c.twin = sh.name + "/" + (shifted ? std::string("clean-shift") : clean_name(jitter));
        cells.push_back(std::move(c));
      };
      for (double j : cleans) make(clean_name(j), j, {});
      const bool any_shifted = std::any_of(wanted.begin(), wanted.end(), [](const std::string& s) {
        return s == "clean-shift" || is_shifted(s);
      });
      if (any_shifted && sh.pp == 1) make("clean-shift", o.jitter, {}, true);
      if (o.full) continue;
      for (const std::string& s : wanted) {
        if (s.rfind("clean", 0) == 0 || (needs_pipeline(s) && sh.pp == 1) || (is_shifted(s) && sh.pp > 1)) continue;
        make(s, o.jitter, faults_of(s, sh, o), is_shifted(s));
      }
    }
  }
  return cells;
}

}  // namespace sp::bench::detection
