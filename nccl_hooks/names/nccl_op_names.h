// Names and sizes NCCL uses: element sizes of ncclDataType_t, the function names the profiler
// plugin reports ("AllReduce", ...) and its datatype names ("ncclFloat32", ...), mapped to the
// probe's sp_coll_type.
#pragma once

#include <cstdint>

#include "straggler_probe/probe.h"

namespace sp::nccl {

// Bytes per element of an ncclDataType_t value, 0 if unknown.
uint32_t datatype_size(int datatype);
// Bytes per element of a datatype name as the plugin reports it ("ncclBfloat16"), 0 if unknown.
uint32_t datatype_size_by_name(const char* name);
// sp_coll_type of a plugin function name ("ReduceScatter"); SP_COLL_NONE if unknown.
sp_coll_type coll_type_by_name(const char* func);
// sp_coll_type of a v1 ncclFunc_t number (Broadcast=0 ... Recv=7).
sp_coll_type coll_type_by_func_id(uint32_t func);
// The sp_op_kind an operation of this type is: SEND, RECV or COLLECTIVE.
sp_op_kind op_kind_of(sp_coll_type t);
// "ncclAllReduce"-style name used for interned event names.
const char* api_name(sp_coll_type t);

}  // namespace sp::nccl
