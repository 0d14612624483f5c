// The NCCL types the interposer's entry points take. With the NCCL headers available
// (SP_HAVE_NCCL_HEADERS) they are nccl.h's own, so every interposer definition is checked
// against the real prototype by the compiler; without them we declare the same ABI ourselves
// (enums are int-sized, handles are pointers, ncclUniqueId is 128 bytes).
#pragma once

#include <cstddef>
#include <cstdint>

#ifdef SP_HAVE_NCCL_HEADERS
#include <nccl.h>
#define SP_NCCL_HEADER_VERSION NCCL_VERSION_CODE
#else
#define SP_NCCL_HEADER_VERSION 0
extern "C" {
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;
typedef struct ncclComm* ncclComm_t;
typedef struct ncclConfig_v22800 ncclConfig_t;  // only ever passed by pointer
typedef struct ncclSimInfo_v22200 ncclSimInfo_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;
typedef struct CUstream_st* cudaStream_t;
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 } ncclRedOp_t;
typedef enum {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;
}
#endif

static_assert(sizeof(ncclResult_t) == 4 && sizeof(ncclDataType_t) == 4 && sizeof(ncclRedOp_t) == 4);
static_assert(sizeof(ncclUniqueId) == 128);

// NCCL 2.29's one-sided operations (ncclPutSignal, ncclSignal, ncclWaitSignal) take a descriptor
// older nccl.h files do not declare; with 2.29+ headers it is theirs, so the interposer's
// definitions are checked against the real prototypes there too.
#if SP_NCCL_HEADER_VERSION < 22900
extern "C" {
typedef struct {
  int opCnt;   // signals to wait for
  int peer;    // from this rank
  int sigIdx;
  int ctx;
} ncclWaitSignalDesc_t;
}
#endif
static_assert(sizeof(ncclWaitSignalDesc_t) == 16);

