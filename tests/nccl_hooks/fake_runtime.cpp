// See fake_runtime.h.
#include "fake_runtime.h"

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct State {
  std::mutex mutex;
  std::vector<sp_event> events;
  std::vector<std::string> names{""};
  std::unordered_map<std::string, uint32_t> ids;
  std::vector<int64_t> marks;
  int64_t last_mark = -1;
  int inits = 0;
};

State& state() {
  static State* s = new State();
  return *s;
}

}  // namespace

extern "C" {

SP_API int sp_record(const sp_event* ev) {
  if (ev == nullptr) return SP_ERR_INVALID;
  std::lock_guard<std::mutex> lock(state().mutex);
  state().events.push_back(*ev);
  return SP_OK;
}

SP_API uint32_t sp_intern(const char* name) {
  if (name == nullptr) return 0;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.ids.find(name);
  if (it != s.ids.end()) return it->second;
  const auto id = static_cast<uint32_t>(s.names.size());
  s.names.emplace_back(name);
  s.ids.emplace(name, id);
  return id;
}

SP_API int sp_init(const sp_config*) {
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().inits;
  return SP_OK;
}

SP_API int sp_mark_step(int64_t step) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().marks.push_back(step);
  state().last_mark = step;
  return SP_OK;
}

SP_API int64_t sp_last_marked_step(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().last_mark;
}

SP_API size_t sp_test_events(sp_event* out, size_t capacity) {
  std::lock_guard<std::mutex> lock(state().mutex);
  const auto& e = state().events;
  for (size_t i = 0; i < e.size() && i < capacity && out != nullptr; ++i) out[i] = e[i];
  return e.size();
}

SP_API const char* sp_test_name(uint32_t id) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return id < state().names.size() ? state().names[id].c_str() : "";
}

SP_API void sp_test_clear(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().events.clear();
  state().marks.clear();
}

SP_API size_t sp_test_marks(int64_t* out, size_t capacity) {
  std::lock_guard<std::mutex> lock(state().mutex);
  const auto& m = state().marks;
  for (size_t i = 0; i < m.size() && i < capacity && out != nullptr; ++i) out[i] = m[i];
  return m.size();
}

SP_API int sp_test_inits(void) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().inits;
}

}  // extern "C"
