#include "nccl_op_names.h"

#include <cstring>

namespace sp::nccl {

uint32_t datatype_size(int datatype) {
  switch (datatype) {
    case 0: case 1: case 10: case 11: return 1;  // int8, uint8, fp8 e4m3 / e5m2
    case 6: case 9: return 2;                    // float16, bfloat16
    case 2: case 3: case 7: return 4;            // int32, uint32, float32
    case 4: case 5: case 8: return 8;            // int64, uint64, float64
    default: return 0;
  }
}

uint32_t datatype_size_by_name(const char* name) {
  if (name == nullptr) return 0;
  struct Entry {
    const char* name;
    uint32_t size;
  };
  static constexpr Entry kTable[] = {
      {"ncclInt8", 1},     {"ncclUint8", 1},       {"ncclInt32", 4},       {"ncclUint32", 4},
      {"ncclInt64", 8},    {"ncclUint64", 8},      {"ncclFloat16", 2},     {"ncclFloat32", 4},
      {"ncclFloat64", 8},  {"ncclBfloat16", 2},    {"ncclFloat8e4m3", 1},  {"ncclFloat8e5m2", 1},
  };
  for (const Entry& e : kTable) {
    if (std::strcmp(e.name, name) == 0) return e.size;
  }
  return 0;
}

sp_coll_type coll_type_by_name(const char* func) {
  if (func == nullptr) return SP_COLL_NONE;
  struct Entry {
    const char* name;
    sp_coll_type type;
  };
  static constexpr Entry kTable[] = {
      {"AllReduce", SP_COLL_ALL_REDUCE},   {"AllGather", SP_COLL_ALL_GATHER},
      {"ReduceScatter", SP_COLL_REDUCE_SCATTER}, {"Broadcast", SP_COLL_BROADCAST},
      {"Reduce", SP_COLL_REDUCE},          {"AlltoAll", SP_COLL_ALL_TO_ALL},
      {"AllToAll", SP_COLL_ALL_TO_ALL},    {"Gather", SP_COLL_GATHER},
      {"Scatter", SP_COLL_SCATTER},        {"Send", SP_COLL_SEND},
      {"Recv", SP_COLL_RECV},
  };
  for (const Entry& e : kTable) {
    if (std::strcmp(e.name, func) == 0) return e.type;
  }
  return SP_COLL_NONE;
}

sp_coll_type coll_type_by_func_id(uint32_t func) {
  switch (func) {
    case 0: return SP_COLL_BROADCAST;
    case 1: return SP_COLL_REDUCE;
    case 2: return SP_COLL_ALL_GATHER;
    case 3: return SP_COLL_REDUCE_SCATTER;
    case 4: return SP_COLL_ALL_REDUCE;
    case 6: return SP_COLL_SEND;
    case 7: return SP_COLL_RECV;
    default: return SP_COLL_NONE;  // 5 = SendRecv (internal), newer ids unknown to v1
  }
}

sp_op_kind op_kind_of(sp_coll_type t) {
  if (t == SP_COLL_SEND) return SP_OP_SEND;
  if (t == SP_COLL_RECV) return SP_OP_RECV;
  return SP_OP_COLLECTIVE;
}

const char* api_name(sp_coll_type t) {
  switch (t) {
    case SP_COLL_ALL_REDUCE: return "ncclAllReduce";
    case SP_COLL_ALL_GATHER: return "ncclAllGather";
    case SP_COLL_REDUCE_SCATTER: return "ncclReduceScatter";
    case SP_COLL_BROADCAST: return "ncclBroadcast";
    case SP_COLL_REDUCE: return "ncclReduce";
    case SP_COLL_ALL_TO_ALL: return "ncclAlltoAll";
    case SP_COLL_GATHER: return "ncclGather";
    case SP_COLL_SCATTER: return "ncclScatter";
    case SP_COLL_SEND: return "ncclSend";
    case SP_COLL_RECV: return "ncclRecv";
    case SP_COLL_BARRIER: return "ncclBarrier";
    default: return "ncclGroup";
  }
}

}  // namespace sp::nccl
