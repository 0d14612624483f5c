// Walking the records of one CUPTI activity buffer.
//
// Production code iterates with cuptiActivityGetNextRecord (CUPTI knows the size of every record
// version it writes). Tests, and the parser's pure entry point, use our own walker over the CUDA
// 13 record sizes, which stops cleanly at an unknown kind or a truncated record.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loader/cupti_loader.h"

namespace sp::cupti {

class RecordIterator {
 public:
  virtual ~RecordIterator() = default;
  // Advances *record (nullptr: first record) inside buffer[0, valid). Returns false at the end or
  // when the buffer cannot be walked further (then `stopped_early()` says so).
  virtual bool next(uint8_t* buffer, size_t valid, uint8_t** record) = 0;
  virtual bool stopped_early() const = 0;
  // Clears stopped_early() before the next buffer.
  virtual void reset() = 0;
};

// Our walker over CUDA 13 layouts.
class Cupti13RecordIterator final : public RecordIterator {
 public:
  bool next(uint8_t* buffer, size_t valid, uint8_t** record) override;
  bool stopped_early() const override { return stopped_early_; }
  void reset() override { stopped_early_ = false; }

 private:
  bool stopped_early_ = false;
};

// cuptiActivityGetNextRecord.
class CuptiLibRecordIterator final : public RecordIterator {
 public:
  explicit CuptiLibRecordIterator(const CuptiApi& api) : api_(api) {}
  bool next(uint8_t* buffer, size_t valid, uint8_t** record) override;
  bool stopped_early() const override { return stopped_early_; }
  void reset() override { stopped_early_ = false; }

 private:
  const CuptiApi& api_;
  bool stopped_early_ = false;
};

}  // namespace sp::cupti
