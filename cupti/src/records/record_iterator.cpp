#include "record_iterator.h"

#include <cstring>

#include "loader/cupti_records.h"

namespace sp::cupti {

bool Cupti13RecordIterator::next(uint8_t* buffer, size_t valid, uint8_t** record) {
  size_t pos = 0;
  if (*record != nullptr) {
    uint32_t kind = 0;
    std::memcpy(&kind, *record, sizeof(kind));
    pos = static_cast<size_t>(*record - buffer) + record_size_13(kind);
  }
  if (pos >= valid) return false;
  if (valid - pos < sizeof(uint32_t)) {
    stopped_early_ = true;
    return false;
  }
  uint32_t kind = 0;
  std::memcpy(&kind, buffer + pos, sizeof(kind));
  const size_t size = record_size_13(kind);
  if (size == 0 || valid - pos < size) {
    stopped_early_ = true;  // unknown kind (cannot know its size) or truncated record
    return false;
  }
  *record = buffer + pos;
  return true;
}

bool CuptiLibRecordIterator::next(uint8_t* buffer, size_t valid, uint8_t** record) {
  void* rec = *record;
  const CuptiResult r = api_.get_next_record(buffer, valid, &rec);
  if (r == kCuptiSuccess && rec != nullptr) {
    *record = static_cast<uint8_t*>(rec);
    return true;
  }
  if (r != kCuptiMaxLimitReached) stopped_early_ = true;
  return false;
}

}  // namespace sp::cupti
