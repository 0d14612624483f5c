// The nccl* entry points: with LD_PRELOAD they take precedence over libnccl.so.2's weak nccl*
// symbols; each forwards to the real pnccl* (real_nccl.h) and records the call (interposer_recorder.h).
// The prototypes are nccl.h's when the headers are available, so the compiler checks every one.
#include <atomic>
#include <string>

#include "interposer/interposer_recorder.h"
#include "nccl_op_names.h"
#include "nccl_types.h"
#include "interposer/real_nccl.h"
#include "straggler_probe/log.h"

#define SP_NCCL_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using sp::nccl::InterposerRecorder;
using sp::nccl::real_nccl;

ncclResult_t missing(const char* name) {
  sp::runtime::log::warn_once("nccl_real_missing",
                     std::string("the real ") + name + " is not in this process (libnccl.so.2 "
                     "not loaded?): the call fails with ncclInternalError");
  return ncclInternalError;
}

template <typename Fn, typename... Args>
ncclResult_t op(Fn* real, const char* name, sp_coll_type coll, ncclComm_t comm, size_t count,
                ncclDataType_t dt, int peer, int root, cudaStream_t stream, Args... args) {
  if (real == nullptr) return missing(name);
  InterposerRecorder& ip = InterposerRecorder::instance();
  InterposerRecorder::Call call = ip.begin_op(coll, comm, count, dt, peer, root, stream);
  const ncclResult_t r = real(args...);
  ip.end_op(call, r);
  return r;
}

}  // namespace

SP_NCCL_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                          ncclDataType_t datatype, ncclRedOp_t redop,
                                          ncclComm_t comm, cudaStream_t stream) {
  return op(real_nccl().AllReduce, "ncclAllReduce", SP_COLL_ALL_REDUCE, comm, count, datatype, -1,
            -1, stream, sendbuff, recvbuff, count, datatype, redop, comm, stream);
}

SP_NCCL_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                          ncclDataType_t datatype, int root, ncclComm_t comm,
                                          cudaStream_t stream) {
  return op(real_nccl().Broadcast, "ncclBroadcast", SP_COLL_BROADCAST, comm, count, datatype, -1,
            root, stream, sendbuff, recvbuff, count, datatype, root, comm, stream);
}

SP_NCCL_EXPORT ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                                      ncclComm_t comm, cudaStream_t stream) {
  return op(real_nccl().Bcast, "ncclBcast", SP_COLL_BROADCAST, comm, count, datatype, -1, root,
            stream, buff, count, datatype, root, comm, stream);
}

SP_NCCL_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                       ncclDataType_t datatype, ncclRedOp_t redop, int root,
                                       ncclComm_t comm, cudaStream_t stream) {
  return op(real_nccl().Reduce, "ncclReduce", SP_COLL_REDUCE, comm, count, datatype, -1, root,
            stream, sendbuff, recvbuff, count, datatype, redop, root, comm, stream);
}

SP_NCCL_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                          ncclDataType_t datatype, ncclComm_t comm,
                                          cudaStream_t stream) {
  return op(real_nccl().AllGather, "ncclAllGather", SP_COLL_ALL_GATHER, comm, sendcount, datatype,
            -1, -1, stream, sendbuff, recvbuff, sendcount, datatype, comm, stream);
}

SP_NCCL_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff,
                                              size_t recvcount, ncclDataType_t datatype,
                                              ncclRedOp_t redop, ncclComm_t comm,
                                              cudaStream_t stream) {
  return op(real_nccl().ReduceScatter, "ncclReduceScatter", SP_COLL_REDUCE_SCATTER, comm,
            recvcount, datatype, -1, -1, stream, sendbuff, recvbuff, recvcount, datatype, redop,
            comm, stream);
}

SP_NCCL_EXPORT ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                         ncclDataType_t datatype, ncclComm_t comm,
                                         cudaStream_t stream) {
  return op(real_nccl().AlltoAll, "ncclAlltoAll", SP_COLL_ALL_TO_ALL, comm, count, datatype, -1,
            -1, stream, sendbuff, recvbuff, count, datatype, comm, stream);
}

SP_NCCL_EXPORT ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count,
                                       ncclDataType_t datatype, int root, ncclComm_t comm,
                                       cudaStream_t stream) {
  return op(real_nccl().Gather, "ncclGather", SP_COLL_GATHER, comm, count, datatype, -1, root,
            stream, sendbuff, recvbuff, count, datatype, root, comm, stream);
}

SP_NCCL_EXPORT ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                                        ncclDataType_t datatype, int root, ncclComm_t comm,
                                        cudaStream_t stream) {
  return op(real_nccl().Scatter, "ncclScatter", SP_COLL_SCATTER, comm, count, datatype, -1, root,
            stream, sendbuff, recvbuff, count, datatype, root, comm, stream);
}

SP_NCCL_EXPORT ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype,
                                     int peer, ncclComm_t comm, cudaStream_t stream) {
  return op(real_nccl().Send, "ncclSend", SP_COLL_SEND, comm, count, datatype, peer, -1, stream,
            sendbuff, count, datatype, peer, comm, stream);
}

SP_NCCL_EXPORT ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype,
                                     int peer, ncclComm_t comm, cudaStream_t stream) {
  return op(real_nccl().Recv, "ncclRecv", SP_COLL_RECV, comm, count, datatype, peer, -1, stream,
            recvbuff, count, datatype, peer, comm, stream);
}

// --- one-sided operations (NCCL 2.29+) --------------------------------------------------------

template <typename Fn, typename... Args>
ncclResult_t one_sided(Fn* real, const char* name, sp_coll_type coll, ncclComm_t comm,
                       uint64_t bytes, int peer, uint32_t signals, cudaStream_t stream,
                       Args... args) {
  if (real == nullptr) return missing(name);
  InterposerRecorder& ip = InterposerRecorder::instance();
  InterposerRecorder::Call call = ip.begin_one_sided(coll, comm, bytes, peer, signals, stream);
  const ncclResult_t r = real(args...);
  ip.end_op(call, r);
  return r;
}

SP_NCCL_EXPORT ncclResult_t ncclPutSignal(const void* localbuff, size_t count,
                                          ncclDataType_t datatype, int peer, ncclWindow_t peerWin,
                                          size_t peerWinOffset, int sigIdx, int ctx,
                                          unsigned int flags, ncclComm_t comm,
                                          cudaStream_t stream) {
  return one_sided(real_nccl().PutSignal, "ncclPutSignal", SP_COLL_SEND, comm,
                   static_cast<uint64_t>(count) * sp::nccl::datatype_size(datatype), peer, 1,
                   stream, localbuff, count, datatype, peer, peerWin, peerWinOffset, sigIdx, ctx,
                   flags, comm, stream);
}

SP_NCCL_EXPORT ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags,
                                       ncclComm_t comm, cudaStream_t stream) {
  return one_sided(real_nccl().Signal, "ncclSignal", SP_COLL_SEND, comm, 0, peer, 1, stream,
                   peer, sigIdx, ctx, flags, comm, stream);
}

SP_NCCL_EXPORT ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs,
                                           ncclComm_t comm, cudaStream_t stream) {
  // One operation per call: from one peer, numbered as the last signal it waits for; from
  // several, peer -1 (it then matches no single sender).
  int peer = -1;
  uint32_t signals = 0;
  for (int i = 0; signalDescs != nullptr && i < nDesc; ++i) {
    if (i == 0) peer = signalDescs[i].peer;
    if (signalDescs[i].peer != peer) peer = -2;
    signals += signalDescs[i].opCnt > 0 ? static_cast<uint32_t>(signalDescs[i].opCnt) : 0;
  }
  return one_sided(real_nccl().WaitSignal, "ncclWaitSignal", SP_COLL_RECV, comm, 0,
                   peer < 0 ? -1 : peer, peer < 0 ? 1 : signals, stream, nDesc, signalDescs,
                   comm, stream);
}

SP_NCCL_EXPORT ncclResult_t ncclGroupStart() {
  auto* real = real_nccl().GroupStart;
  if (real == nullptr) return missing("ncclGroupStart");
  const ncclResult_t r = real();
  InterposerRecorder::instance().group_start_done(r);
  return r;
}

SP_NCCL_EXPORT ncclResult_t ncclGroupEnd() {
  auto* real = real_nccl().GroupEnd;
  if (real == nullptr) return missing("ncclGroupEnd");
  InterposerRecorder& ip = InterposerRecorder::instance();
  InterposerRecorder::Call call = ip.begin_group_end();
  const ncclResult_t r = real();
  ip.end_group_end(call, r);
  return r;
}

// --- communicators -------------------------------------------------------------------------

SP_NCCL_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                             int rank) {
  auto* real = real_nccl().CommInitRank;
  if (real == nullptr) return missing("ncclCommInitRank");
  const ncclResult_t r = real(comm, nranks, commId, rank);
  if ((r == ncclSuccess || r == ncclInProgress) && comm != nullptr) {
    InterposerRecorder::instance().comm_created(*comm, InterposerRecorder::group_id_of(commId), rank, nranks, true);
  }
  return r;
}

SP_NCCL_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks,
                                                   ncclUniqueId commId, int rank,
                                                   ncclConfig_t* config) {
  auto* real = real_nccl().CommInitRankConfig;
  if (real == nullptr) return missing("ncclCommInitRankConfig");
  const ncclResult_t r = real(comm, nranks, commId, rank, config);
  if ((r == ncclSuccess || r == ncclInProgress) && comm != nullptr) {
    InterposerRecorder::instance().comm_created(*comm, InterposerRecorder::group_id_of(commId), rank, nranks, true);
  }
  return r;
}

SP_NCCL_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank,
                                                     int nId, ncclUniqueId* commIds,
                                                     ncclConfig_t* config) {
  auto* real = real_nccl().CommInitRankScalable;
  if (real == nullptr) return missing("ncclCommInitRankScalable");
  const ncclResult_t r = real(newcomm, nranks, myrank, nId, commIds, config);
  if ((r == ncclSuccess || r == ncclInProgress) && newcomm != nullptr && commIds != nullptr &&
      nId > 0) {
    // Every rank passes the same nId ids: hash them all.
    uint64_t id = 0;
    for (int i = 0; i < nId; ++i) id = id * 1000003u ^ InterposerRecorder::group_id_of(commIds[i]);
    InterposerRecorder::instance().comm_created(*newcomm, id, myrank, nranks, true);
  }
  return r;
}

SP_NCCL_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  auto* real = real_nccl().CommInitAll;
  if (real == nullptr) return missing("ncclCommInitAll");
  const ncclResult_t r = real(comms, ndev, devlist);
  if (r == ncclSuccess && comms != nullptr) {
    // One process drives all ranks: a process-local identity is all that is needed.
    static std::atomic<uint64_t> counter{0};
    const uint64_t id = sp::nccl::CommRegistry::child_id(0x1a11, static_cast<uint64_t>(ndev),
                                                         counter.fetch_add(1));
    for (int i = 0; i < ndev; ++i) InterposerRecorder::instance().comm_created(comms[i], id, i, ndev, true);
  }
  return r;
}

SP_NCCL_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                          ncclConfig_t* config) {
  auto* real = real_nccl().CommSplit;
  if (real == nullptr) return missing("ncclCommSplit");
  const ncclResult_t r = real(comm, color, key, newcomm, config);
  // Ranks with NCCL_SPLIT_NOCOLOR get no communicator (*newcomm == NULL) but still advance the
  // parent's child counter, as every member does: that keeps the counters in step.
  if ((r == ncclSuccess || r == ncclInProgress) && newcomm != nullptr) {
    if (*newcomm != nullptr) {
      InterposerRecorder::instance().comm_split(comm, *newcomm, static_cast<uint64_t>(color) + 1);
    } else if (auto* p = sp::nccl::comm_registry().find(comm)) {
      p->children.fetch_add(1);
    }
  }
  return r;
}

SP_NCCL_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList,
                                           int excludeRanksCount, ncclComm_t* newcomm,
                                           ncclConfig_t* config, int shrinkFlags) {
  auto* real = real_nccl().CommShrink;
  if (real == nullptr) return missing("ncclCommShrink");
  const ncclResult_t r =
      real(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  if ((r == ncclSuccess || r == ncclInProgress) && newcomm != nullptr && *newcomm != nullptr) {
    InterposerRecorder::instance().comm_split(comm, *newcomm, 0x5471a4c0ull);
  }
  return r;
}

// NCCL 2.29: ranks join an existing communicator. The members pass different arguments
// (existing non-root ranks no unique id, new ranks no parent), so no identity all members could
// derive alike is known: the grown communicator is registered without one (group_id 0; its
// operations are recorded but not matched across ranks).
SP_NCCL_EXPORT ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId,
                                         int rank, ncclComm_t* newcomm, ncclConfig_t* config) {
  auto* real = real_nccl().CommGrow;
  if (real == nullptr) return missing("ncclCommGrow");
  const ncclResult_t r = real(comm, nRanks, uniqueId, rank, newcomm, config);
  if ((r == ncclSuccess || r == ncclInProgress) && newcomm != nullptr && *newcomm != nullptr) {
    int my_rank = rank;
    const sp::nccl::RealNccl& nccl = real_nccl();
    if (my_rank < 0 && nccl.CommUserRank != nullptr &&
        nccl.CommUserRank(*newcomm, &my_rank) != ncclSuccess) {
      my_rank = -1;
    }
    InterposerRecorder::instance().comm_created(*newcomm, 0, my_rank, nRanks, false);
  }
  return r;
}

SP_NCCL_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  auto* real = real_nccl().CommFinalize;
  if (real == nullptr) return missing("ncclCommFinalize");
  return real(comm);
}

SP_NCCL_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  auto* real = real_nccl().CommDestroy;
  if (real == nullptr) return missing("ncclCommDestroy");
  InterposerRecorder::instance().comm_destroyed(comm);  // before: the address may be reused at once
  return real(comm);
}

SP_NCCL_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  auto* real = real_nccl().CommAbort;
  if (real == nullptr) return missing("ncclCommAbort");
  InterposerRecorder::instance().comm_destroyed(comm);
  return real(comm);
}
