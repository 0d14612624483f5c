/* A fake libnccl.so.2 for GPU-free tests of the interposer. Like the real library it defines
 * every entry point as a strong pnccl* with a weak nccl* alias, so an LD_PRELOADed definition of
 * nccl* takes precedence. Every call is logged with its arguments, so tests can check that what
 * the application passed reached "NCCL" intact. */
#ifndef SP_TESTS_FAKE_NCCL_H_
#define SP_TESTS_FAKE_NCCL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fake_nccl_call {
  char name[32];
  const void* sendbuff;
  void* recvbuff;
  size_t count;
  int datatype;
  int op;
  int root;
  int peer;
  void* comm;
  void* stream;
} fake_nccl_call;

/* The fake communicator behind an ncclComm_t. */
typedef struct fake_nccl_comm {
  int rank;
  int nranks;
  int nonblocking; /* operations return ncclInProgress (7) */
} fake_nccl_comm;

/* The NCCL types as nccl.h declares them for the ABI (enums as int, handles as pointers), shared by
 * the fake library and the test programs, which use no NCCL headers. */
typedef int ncclResult_t;
typedef fake_nccl_comm* ncclComm_t;
typedef struct {
  char internal[128];
} ncclUniqueId;
typedef void* cudaStream_t;

const fake_nccl_call* fake_nccl_log(size_t* count);
void fake_nccl_clear_log(void);
/* The next call of `name` ("pncclAllReduce", ...) returns `result` instead of ncclSuccess. */
void fake_nccl_fail_next(const char* name, int result);
int fake_nccl_group_depth(void);

#ifdef __cplusplus
}
#endif

#endif /* SP_TESTS_FAKE_NCCL_H_ */
