// An NCCL program (against the fake libnccl.so.2) for runs under the real libstraggler_probe.so:
// every call must still reach NCCL and return its result, and the process must exit cleanly.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "nccl_api_decls.h"

int main() {
  ncclUniqueId id;
  std::memset(&id, 7, sizeof(id));
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, 1, id, 0) != 0) return 2;
  float buf[64] = {};
  for (int step = 0; step < 50; ++step) {
    if (ncclAllReduce(buf, buf, 64, kFloat32, kSum, comm, nullptr) != 0) return 3;
    if (ncclGroupStart() != 0) return 4;
    ncclSend(buf, 8, kFloat32, 0, comm, nullptr);
    ncclRecv(buf, 8, kFloat32, 0, comm, nullptr);
    if (ncclGroupEnd() != 0) return 5;
    // A real step lasts milliseconds. Back-to-back steps at microsecond pace outrun the summary
    // writer on a loaded machine, and the probe then skips whole steps by design.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  size_t n = 0;
  fake_nccl_log(&n);
  // 1 init + 50 * (all-reduce + group start + send + recv + group end)
  if (n != 1 + 50 * 5) {
    std::fprintf(stderr, "expected %d NCCL calls, got %zu\n", 1 + 50 * 5, n);
    return 6;
  }
  ncclCommDestroy(comm);
  std::printf("nccl ok\n");
  return 0;
}
