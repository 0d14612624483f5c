// A short list of node indices (step_model.h): a node's in-rank dependencies (Node::deps) and
// a communication group's members (StepModel::groups). A vector that keeps up to kInline
// indices in itself: nearly every node has 1-3 dependencies and every p2p group 2 members; a
// std::vector gave each a heap block of its own, allocated and freed every step (~213 k nodes
// and ~65 k p2p groups a step at 4096 ranks dp x pp). Longer lists (a rank's step-end marker
// waits for all its unconsumed communication, a collective has every member of its group) move
// to the heap. The same size as a std::vector<int>; the interface is the part of vector the
// model uses.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <ostream>
#include <vector>

namespace sp::online {

class NodeList {
 public:
  using value_type = int;
  using iterator = int*;
  using const_iterator = const int*;
  static constexpr uint32_t kInline = 4;

  NodeList() = default;
  NodeList(std::initializer_list<int> values) { assign(values.begin(), values.end()); }
  // Implicit, as a vector's copy would be (tests build nodes from vectors).
  NodeList(const std::vector<int>& values) { assign(values.data(), values.data() + values.size()); }
  NodeList(const NodeList& o) { assign(o.begin(), o.end()); }
  NodeList(NodeList&& o) noexcept { take(&o); }
  NodeList& operator=(const NodeList& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  NodeList& operator=(NodeList&& o) noexcept {
    if (this != &o) {
      release();
      take(&o);
    }
    return *this;
  }
  ~NodeList() { release(); }

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

  friend bool operator==(const NodeList& a, const NodeList& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend std::ostream& operator<<(std::ostream& os, const NodeList& d) {
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
  void take(NodeList* o) {
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
