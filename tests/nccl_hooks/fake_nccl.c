/* See fake_nccl.h. Built as libnccl.so.2 (SONAME libnccl.so.2) in the test tree. */
#include "fake_nccl.h"

#include <stdlib.h>
#include <string.h>

#define MAX_CALLS 4096
static fake_nccl_call g_log[MAX_CALLS];
static size_t g_count;
static char g_fail_name[32];
static int g_fail_result;
static int g_group_depth;

const fake_nccl_call* fake_nccl_log(size_t* count) {
  *count = g_count;
  return g_log;
}
void fake_nccl_clear_log(void) { g_count = 0; }
void fake_nccl_fail_next(const char* name, int result) {
  strncpy(g_fail_name, name, sizeof(g_fail_name) - 1);
  g_fail_result = result;
}
int fake_nccl_group_depth(void) { return g_group_depth; }

static ncclResult_t log_call(const char* name, const void* s, void* r, size_t count, int dt,
                             int op, int root, int peer, void* comm, void* stream) {
  if (g_count < MAX_CALLS) {
    fake_nccl_call* c = &g_log[g_count++];
    memset(c, 0, sizeof(*c));
    strncpy(c->name, name, sizeof(c->name) - 1);
    c->sendbuff = s;
    c->recvbuff = r;
    c->count = count;
    c->datatype = dt;
    c->op = op;
    c->root = root;
    c->peer = peer;
    c->comm = comm;
    c->stream = stream;
  }
  if (g_fail_name[0] != '\0' && strcmp(g_fail_name, name) == 0) {
    g_fail_name[0] = '\0';
    return g_fail_result;
  }
  if (comm != NULL && ((fake_nccl_comm*)comm)->nonblocking) return 7; /* ncclInProgress */
  return 0;
}

#define WEAK_ALIAS(name) __attribute__((weak, alias("p" #name)))

ncclResult_t pncclGetVersion(int* v) {
  *v = 22809;
  return 0;
}
ncclResult_t ncclGetVersion(int* v) WEAK_ALIAS(ncclGetVersion);

static ncclResult_t make_comm(ncclComm_t* comm, int nranks, int rank, int nonblocking) {
  fake_nccl_comm* c = (fake_nccl_comm*)calloc(1, sizeof(*c));
  c->rank = rank;
  c->nranks = nranks;
  c->nonblocking = nonblocking;
  *comm = c;
  return 0;
}

ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  log_call("pncclCommInitRank", id.internal, NULL, (size_t)nranks, 0, 0, rank, -1, NULL, NULL);
  return make_comm(comm, nranks, rank, 0);
}
ncclResult_t ncclCommInitRank(ncclComm_t*, int, ncclUniqueId, int) WEAK_ALIAS(ncclCommInitRank);

/* Any non-NULL config makes a non-blocking communicator (the fake's convention). */
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                     void* config) {
  log_call("pncclCommInitRankConfig", id.internal, config, (size_t)nranks, 0, 0, rank, -1, NULL,
           NULL);
  make_comm(comm, nranks, rank, config != NULL);
  return config != NULL ? 7 : 0;
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t*, int, ncclUniqueId, int, void*)
    WEAK_ALIAS(ncclCommInitRankConfig);

ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                            void* config) {
  log_call("pncclCommSplit", NULL, config, 0, 0, key, color, -1, comm, NULL);
  if (color < 0) {
    *newcomm = NULL;
    return 0;
  }
  return make_comm(newcomm, comm->nranks / 2, comm->rank / 2, 0);
}
ncclResult_t ncclCommSplit(ncclComm_t, int, int, ncclComm_t*, void*) WEAK_ALIAS(ncclCommSplit);

ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  log_call("pncclCommDestroy", NULL, NULL, 0, 0, 0, -1, -1, comm, NULL);
  free(comm);
  return 0;
}
ncclResult_t ncclCommDestroy(ncclComm_t) WEAK_ALIAS(ncclCommDestroy);

ncclResult_t pncclCommAbort(ncclComm_t comm) {
  log_call("pncclCommAbort", NULL, NULL, 0, 0, 0, -1, -1, comm, NULL);
  free(comm);
  return 0;
}
ncclResult_t ncclCommAbort(ncclComm_t) WEAK_ALIAS(ncclCommAbort);

ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  return log_call("pncclCommFinalize", NULL, NULL, 0, 0, 0, -1, -1, comm, NULL);
}
ncclResult_t ncclCommFinalize(ncclComm_t) WEAK_ALIAS(ncclCommFinalize);

ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  *count = comm->nranks;
  return 0;
}
ncclResult_t ncclCommCount(const ncclComm_t, int*) WEAK_ALIAS(ncclCommCount);

ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  *rank = comm->rank;
  return 0;
}
ncclResult_t ncclCommUserRank(const ncclComm_t, int*) WEAK_ALIAS(ncclCommUserRank);

ncclResult_t pncclAllReduce(const void* s, void* r, size_t n, int dt, int op, ncclComm_t comm,
                            cudaStream_t st) {
  return log_call("pncclAllReduce", s, r, n, dt, op, -1, -1, comm, st);
}
ncclResult_t ncclAllReduce(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t)
    WEAK_ALIAS(ncclAllReduce);

ncclResult_t pncclBroadcast(const void* s, void* r, size_t n, int dt, int root, ncclComm_t comm,
                            cudaStream_t st) {
  return log_call("pncclBroadcast", s, r, n, dt, 0, root, -1, comm, st);
}
ncclResult_t ncclBroadcast(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t)
    WEAK_ALIAS(ncclBroadcast);

/* Like the real library: ncclBcast calls the public ncclBroadcast (which the interposer sees). */
ncclResult_t pncclBcast(void* b, size_t n, int dt, int root, ncclComm_t comm, cudaStream_t st) {
  log_call("pncclBcast", b, b, n, dt, 0, root, -1, comm, st);
  return ncclBroadcast(b, b, n, dt, root, comm, st);
}
ncclResult_t ncclBcast(void*, size_t, int, int, ncclComm_t, cudaStream_t) WEAK_ALIAS(ncclBcast);

ncclResult_t pncclReduce(const void* s, void* r, size_t n, int dt, int op, int root,
                         ncclComm_t comm, cudaStream_t st) {
  return log_call("pncclReduce", s, r, n, dt, op, root, -1, comm, st);
}
ncclResult_t ncclReduce(const void*, void*, size_t, int, int, int, ncclComm_t, cudaStream_t)
    WEAK_ALIAS(ncclReduce);

ncclResult_t pncclAllGather(const void* s, void* r, size_t n, int dt, ncclComm_t comm,
                            cudaStream_t st) {
  return log_call("pncclAllGather", s, r, n, dt, 0, -1, -1, comm, st);
}
ncclResult_t ncclAllGather(const void*, void*, size_t, int, ncclComm_t, cudaStream_t)
    WEAK_ALIAS(ncclAllGather);

ncclResult_t pncclReduceScatter(const void* s, void* r, size_t n, int dt, int op, ncclComm_t comm,
                                cudaStream_t st) {
  return log_call("pncclReduceScatter", s, r, n, dt, op, -1, -1, comm, st);
}
ncclResult_t ncclReduceScatter(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t)
    WEAK_ALIAS(ncclReduceScatter);

ncclResult_t pncclAlltoAll(const void* s, void* r, size_t n, int dt, ncclComm_t comm,
                           cudaStream_t st) {
  return log_call("pncclAlltoAll", s, r, n, dt, 0, -1, -1, comm, st);
}
ncclResult_t ncclAlltoAll(const void*, void*, size_t, int, ncclComm_t, cudaStream_t)
    WEAK_ALIAS(ncclAlltoAll);

ncclResult_t pncclGather(const void* s, void* r, size_t n, int dt, int root, ncclComm_t comm,
                         cudaStream_t st) {
  return log_call("pncclGather", s, r, n, dt, 0, root, -1, comm, st);
}
ncclResult_t ncclGather(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t)
    WEAK_ALIAS(ncclGather);

ncclResult_t pncclScatter(const void* s, void* r, size_t n, int dt, int root, ncclComm_t comm,
                          cudaStream_t st) {
  return log_call("pncclScatter", s, r, n, dt, 0, root, -1, comm, st);
}
ncclResult_t ncclScatter(const void*, void*, size_t, int, int, ncclComm_t, cudaStream_t)
    WEAK_ALIAS(ncclScatter);

ncclResult_t pncclSend(const void* s, size_t n, int dt, int peer, ncclComm_t comm,
                       cudaStream_t st) {
  return log_call("pncclSend", s, NULL, n, dt, 0, -1, peer, comm, st);
}
ncclResult_t ncclSend(const void*, size_t, int, int, ncclComm_t, cudaStream_t)
    WEAK_ALIAS(ncclSend);

ncclResult_t pncclRecv(void* r, size_t n, int dt, int peer, ncclComm_t comm, cudaStream_t st) {
  return log_call("pncclRecv", NULL, r, n, dt, 0, -1, peer, comm, st);
}
ncclResult_t ncclRecv(void*, size_t, int, int, ncclComm_t, cudaStream_t) WEAK_ALIAS(ncclRecv);

/* NCCL 2.29's one-sided operations and communicator growth. */
typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} fake_wait_signal_desc;

ncclResult_t pncclPutSignal(const void* s, size_t n, int dt, int peer, void* win, size_t offset,
                            int sig, int ctx, unsigned flags, ncclComm_t comm, cudaStream_t st) {
  (void)win;
  (void)offset;
  (void)sig;
  (void)ctx;
  (void)flags;
  return log_call("pncclPutSignal", s, NULL, n, dt, 0, -1, peer, comm, st);
}
ncclResult_t ncclPutSignal(const void*, size_t, int, int, void*, size_t, int, int, unsigned,
                           ncclComm_t, cudaStream_t) WEAK_ALIAS(ncclPutSignal);

ncclResult_t pncclSignal(int peer, int sig, int ctx, unsigned flags, ncclComm_t comm,
                         cudaStream_t st) {
  (void)ctx;
  (void)flags;
  return log_call("pncclSignal", NULL, NULL, 0, 0, sig, -1, peer, comm, st);
}
ncclResult_t ncclSignal(int, int, int, unsigned, ncclComm_t, cudaStream_t) WEAK_ALIAS(ncclSignal);

ncclResult_t pncclWaitSignal(int n, fake_wait_signal_desc* d, ncclComm_t comm, cudaStream_t st) {
  return log_call("pncclWaitSignal", NULL, d, (size_t)n, 0, 0, -1, n > 0 ? d[0].peer : -1, comm,
                  st);
}
ncclResult_t ncclWaitSignal(int, fake_wait_signal_desc*, ncclComm_t, cudaStream_t)
    WEAK_ALIAS(ncclWaitSignal);

ncclResult_t pncclCommGrow(ncclComm_t comm, int nranks, const ncclUniqueId* id, int rank,
                           ncclComm_t* newcomm, void* config) {
  log_call("pncclCommGrow", id, config, (size_t)nranks, 0, 0, rank, -1, comm, NULL);
  return make_comm(newcomm, nranks, rank >= 0 ? rank : (comm != NULL ? comm->rank : 0), 0);
}
ncclResult_t ncclCommGrow(ncclComm_t, int, const ncclUniqueId*, int, ncclComm_t*, void*)
    WEAK_ALIAS(ncclCommGrow);

ncclResult_t pncclGroupStart(void) {
  ++g_group_depth;
  return log_call("pncclGroupStart", NULL, NULL, 0, 0, 0, -1, -1, NULL, NULL);
}
ncclResult_t ncclGroupStart(void) WEAK_ALIAS(ncclGroupStart);

ncclResult_t pncclGroupEnd(void) {
  --g_group_depth;
  return log_call("pncclGroupEnd", NULL, NULL, 0, 0, 0, -1, -1, NULL, NULL);
}
ncclResult_t ncclGroupEnd(void) WEAK_ALIAS(ncclGroupEnd);
