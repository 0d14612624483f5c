#include "name_table.h"

namespace sp::runtime {

NameTable::NameTable() { names_.emplace_back(); }

uint32_t NameTable::intern(std::string_view name, InternError* error) {
  *error = InternError::kNone;
  if (name.empty()) {
    *error = InternError::kEmpty;
    return 0;
  }
  if (name.size() > kMaxNameLength) {
    *error = InternError::kTooLong;
    return 0;
  }
  std::lock_guard lock(mutex_);
  std::string key(name);
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  if (names_.size() >= kMaxNames) {
    *error = InternError::kFull;
    return 0;
  }
  const auto id = static_cast<uint32_t>(names_.size());
  names_.push_back(key);
  ids_.emplace(std::move(key), id);
  return id;
}

void NameTable::localize(StepSummary* s) const {
  s->names.assign(1, std::string());
  std::unordered_map<uint32_t, uint32_t> local;  // process-wide id -> summary index
  std::lock_guard lock(mutex_);
  for (OpRecord& op : s->ops) {
    if (op.name_id == 0 || op.name_id >= names_.size()) {
      op.name_id = 0;
      continue;
    }
    auto [it, inserted] = local.emplace(op.name_id, static_cast<uint32_t>(s->names.size()));
    if (inserted) s->names.push_back(names_[op.name_id]);
    op.name_id = it->second;
  }
}

size_t NameTable::size() const {
  std::lock_guard lock(mutex_);
  return names_.size() - 1;
}

std::string NameTable::name(uint32_t id) const {
  std::lock_guard lock(mutex_);
  return id < names_.size() ? names_[id] : std::string();
}

}  // namespace sp::runtime
