// A library that uses NCCL the way torch's extension modules do: linked against libnccl.so.2 and
// loaded by the test with dlopen(RTLD_LOCAL).
#include "nccl_api_decls.h"

extern "C" __attribute__((visibility("default"))) int consumer_all_reduce(void* comm,
                                                                          void* stream) {
  static float buf[77];
  return ncclAllReduce(buf, buf, 77, kFloat32, kSum, static_cast<ncclComm_t>(comm), stream);
}
