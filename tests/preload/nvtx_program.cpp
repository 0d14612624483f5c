// A program that marks its training steps with NVTX only (header-only NVTX v3, as applications
// and libtorch compile it in) and runs NCCL operations against the fake libnccl.so.2. It knows
// nothing of the probe; nvtx_steps_test.cpp runs it under the real libstraggler_probe.so.
//
// Each of the kSteps steps holds exactly three operations (all-reduce 256 B, broadcast 64 B,
// all-reduce 128 B) and, around and inside them, every way of naming a range: push/pop (ASCII and
// wide), start/end with attributes, the domain API with a registered string, ranges nested in the
// step range (one of them with the step's own name, one whose name only starts with it), marks
// with other names, and a second thread busy with its own unrelated ranges.
//
//   nvtx_program            the step is an NVTX range named "train_step"
//   nvtx_program marks      the step ends at nvtxMarkA("step_end") instead
//   nvtx_program app_marks  the application also marks steps itself (sp_mark_step, looked up in
//                           the process as its own instrumentation would): label i at the start
//                           of iteration i, like the package's set-up step before training
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "nccl_api_decls.h"

namespace {

constexpr int kSteps = 12;

nvtxEventAttributes_t ascii_attr(const char* name) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name;
  return a;
}

bool step_body(ncclComm_t comm, float* buf) {
  nvtxRangePushA("forward");
  const bool ok1 = ncclAllReduce(buf, buf, 64, kFloat32, kSum, comm, nullptr) == 0;
  nvtxRangePop();
  nvtxRangePushA("train_step");  // nested range with the step's own name: not a step of its own
  nvtxRangePushA("train_step_inner");
  const bool ok2 = ncclBroadcast(buf, buf, 16, kFloat32, 0, comm, nullptr) == 0;
  nvtxRangePop();
  nvtxRangePop();
  nvtxMarkA("checkpoint");
  const bool ok3 = ncclAllReduce(buf, buf, 32, kFloat32, kSum, comm, nullptr) == 0;
  return ok1 && ok2 && ok3;
}

}  // namespace

int main(int argc, char** argv) {
  const bool marks = argc > 1 && std::strcmp(argv[1], "marks") == 0;
  using MarkStep = int (*)(int64_t);
  const auto app_mark = argc > 1 && std::strcmp(argv[1], "app_marks") == 0
                            ? reinterpret_cast<MarkStep>(dlsym(RTLD_DEFAULT, "sp_mark_step"))
                            : nullptr;
  const char* injection = std::getenv("NVTX_INJECTION64_PATH");
  std::printf("NVTX_INJECTION64_PATH=%s\n", injection != nullptr ? injection : "(unset)");

  ncclUniqueId id;
  std::memset(&id, 9, sizeof(id));
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, 1, id, 0) != 0) return 2;

  // Another thread with its own ranges, some unbalanced: never a step.
  std::atomic<bool> stop{false};
  std::thread other([&stop] {
    while (!stop.load()) {
      nvtxRangePushA("data_loader");
      nvtxRangePushA("decode");
      nvtxRangePop();
      nvtxRangePop();
      nvtxRangePop();  // one pop too many: NVTX returns an error, nothing else happens
      const nvtxRangeId_t r = nvtxRangeStartA("prefetch");
      nvtxRangeEnd(r);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });

  nvtxDomainHandle_t domain = nvtxDomainCreateA("sp_test");
  const nvtxStringHandle_t registered = nvtxDomainRegisterStringA(domain, "train_step");
  float buf[64] = {};
  bool ok = true;
  for (int step = 0; step < kSteps && ok; ++step) {
    if (app_mark != nullptr) app_mark(step);
    if (marks) {
      ok = step_body(comm, buf);
      nvtxMarkA("step_end");
    } else {
      switch (step % 4) {
        case 0:
          nvtxRangePushA("train_step");
          ok = step_body(comm, buf);
          nvtxRangePop();
          break;
        case 1: {
          const nvtxEventAttributes_t a = ascii_attr("train_step");
          const nvtxRangeId_t r = nvtxRangeStartEx(&a);
          ok = step_body(comm, buf);
          nvtxRangeEnd(r);
          break;
        }
        case 2: {
          nvtxEventAttributes_t a = ascii_attr(nullptr);
          a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
          a.message.registered = registered;
          nvtxDomainRangePushEx(domain, &a);
          ok = step_body(comm, buf);
          nvtxDomainRangePop(domain);
          break;
        }
        default:
          nvtxRangePushW(L"train_step");
          ok = step_body(comm, buf);
          nvtxRangePop();
          break;
      }
    }
    // A real step lasts milliseconds; microsecond steps would outrun the summary writer.
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  stop.store(true);
  other.join();
  if (!ok) return 3;
  ncclCommDestroy(comm);
  std::printf("nvtx program ok\n");
  return 0;
}
