// With --step, the artifact keeps the analysed steps in a Python set and lists the per-step
// attributions in that set's iteration order. This reproduces CPython's (3.x) set layout for
// small non-negative ints (hash(i) == i): open addressing with 9 linear probes then perturbed
// probing, growth when 3/5 full, iteration in slot order.
#include <cstdint>
#include <vector>

#include "analysis_state.h"

namespace sp::whatif {
namespace {

class PySet {
 public:
  PySet() : slots_(8, kEmpty) {}

  bool contains(int64_t key) const { return slots_[slot_for(slots_, key)] == key; }

  void add(int64_t key) {
    const size_t j = slot_for(slots_, key);
    if (slots_[j] == key) return;
    slots_[j] = key;
    ++used_;
    if (used_ * 5 >= (slots_.size() - 1) * 3) resize(used_ > 50000 ? used_ * 2 : used_ * 4);
  }

  std::vector<int64_t> items() const {
    std::vector<int64_t> out;
    for (int64_t k : slots_) {
      if (k != kEmpty) out.push_back(k);
    }
    return out;
  }
  size_t size() const { return used_; }

 private:
  static constexpr int64_t kEmpty = -1;
  static constexpr size_t kLinearProbes = 9;

  // CPython's probe sequence for `key`: the slot holding it, else the first empty one on the way.
  static size_t slot_for(const std::vector<int64_t>& table, int64_t key) {
    const size_t mask = table.size() - 1;
    auto perturb = static_cast<uint64_t>(key);
    size_t i = static_cast<size_t>(key) & mask;
    while (true) {
      const size_t probes = (i + kLinearProbes <= mask) ? kLinearProbes : 0;
      for (size_t j = i; j <= i + probes; ++j) {
        if (table[j] == kEmpty || table[j] == key) return j;
      }
      perturb >>= 5;
      i = (i * 5 + 1 + perturb) & mask;
    }
  }

  void resize(size_t minused) {
    size_t newsize = 8;
    while (newsize <= minused) newsize <<= 1;
    std::vector<int64_t> table(newsize, kEmpty);
    for (int64_t k : slots_) {
      if (k != kEmpty) table[slot_for(table, k)] = k;
    }
    slots_.swap(table);
  }

  std::vector<int64_t> slots_;
  size_t used_ = 0;
};

}  // namespace

std::vector<int64_t> python_step_set_order(const std::vector<int64_t>& requested,
                                           const std::vector<int64_t>& trace_steps) {
  // parse_step: set of the requested steps, then list(); then set(list) & set(trace steps).
  PySet parsed;
  for (int64_t s : requested) parsed.add(s);
  PySet a;
  for (int64_t s : parsed.items()) a.add(s);
  PySet b;
  for (int64_t s : trace_steps) b.add(s);
  // set.__and__ iterates over the smaller set and probes the larger.
  const PySet* small = &b;
  const PySet* large = &a;
  if (b.size() > a.size()) std::swap(small, large);
  PySet result;
  for (int64_t s : small->items()) {
    if (large->contains(s)) result.add(s);
  }
  return result.items();
}

}  // namespace sp::whatif
