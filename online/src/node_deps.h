// A node's in-rank dependency list (step_model.h's Node::deps): a vector of node indices that
// keeps up to kInline of them in the node itself. Nearly every node has 1-3 dependencies; a
// std::vector gave each of the step's nodes a heap block of its own, allocated and freed every
// step (~213 k of each a step at 4096 ranks dp x pp, ~90 M instructions of malloc and free).
// Longer lists (a rank's step-end marker waits for all its unconsumed communication) move to the
// heap. The same size as a std::vector<int>; the interface is the part of vector the model uses.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <ostream>
#include <vector>

namespace sp::online {

class NodeDeps {
 public:
  using value_type = int;
  using iterator = int*;
  using const_iterator = const int*;
  static constexpr uint32_t kInline = 4;

  NodeDeps() = default;
  NodeDeps(std::initializer_list<int> values) { assign(values.begin(), values.end()); }
  // Implicit, as a vector's copy would be (tests build nodes from vectors).
  NodeDeps(const std::vector<int>& values) { assign(values.data(), values.data() + values.size()); }
  NodeDeps(const NodeDeps& o) { assign(o.begin(), o.end()); }
  NodeDeps(NodeDeps&& o) noexcept { take(&o); }
  NodeDeps& operator=(const NodeDeps& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  NodeDeps& operator=(NodeDeps&& o) noexcept {
    if (this != &o) {
      release();
      take(&o);
    }
    return *this;
  }
  ~NodeDeps() { release(); }

  void push_back(int v) {
    if (size_ == capacity_) grow(capacity_ * 2);
    data()[size_++] = v;
  }
  void clear() { size_ = 0; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int* data() { return on_heap() ? heap_ : inline_; }
  const int* data() const { return on_heap() ? heap_ : inline_; }
  int* begin() { return data(); }
  int* end() { return data() + size_; }
  const int* begin() const { return data(); }
  const int* end() const { return data() + size_; }
  int operator[](size_t i) const { return data()[i]; }
  int& operator[](size_t i) { return data()[i]; }
  int back() const { return data()[size_ - 1]; }

  friend bool operator==(const NodeDeps& a, const NodeDeps& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend std::ostream& operator<<(std::ostream& os, const NodeDeps& d) {
    os << '{';
    for (size_t i = 0; i < d.size(); ++i) os << (i ? ", " : "") << d[i];
    return os << '}';
  }

 private:
  bool on_heap() const { return capacity_ > kInline; }
  void grow(uint32_t capacity) {
    int* bigger = new int[capacity];
    std::memcpy(bigger, data(), size_ * sizeof(int));
    release();
    heap_ = bigger;
    capacity_ = capacity;
  }
  void assign(const int* first, const int* last) {
    const auto n = static_cast<uint32_t>(last - first);
    size_ = 0;
    if (n > capacity_) grow(n);
    std::copy(first, last, data());
    size_ = n;
  }
  void take(NodeDeps* o) {
    size_ = o->size_;
    capacity_ = o->capacity_;
    if (o->on_heap()) {
      heap_ = o->heap_;
    } else {
      std::copy(o->inline_, o->inline_ + o->size_, inline_);
    }
    o->size_ = 0;
    o->capacity_ = kInline;
  }
  void release() {
    if (on_heap()) delete[] heap_;
    capacity_ = kInline;
  }

  uint32_t size_ = 0;
  uint32_t capacity_ = kInline;
  union {
    int inline_[kInline] = {};
    int* heap_;
  };
};

}  // namespace sp::online
