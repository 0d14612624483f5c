// Fork and exec safety under LD_PRELOAD (test probe library): a forked child (a data-loader
// worker) records nothing and its NCCL calls still work; an exec'd child starts clean.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fake_runtime.h"
#include "nccl_api_decls.h"

namespace {

size_t events() {
  auto fn = reinterpret_cast<sp_test_events_fn>(dlsym(RTLD_DEFAULT, "sp_test_events"));
  return fn != nullptr ? fn(nullptr, 0) : static_cast<size_t>(-1);
}

int fail(const char* what) {
  std::fprintf(stderr, "fork_exec_test: %s\n", what);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--exec-child") == 0) {
    // Fresh image after exec: the probe is loaded again (LD_PRELOAD is inherited) and works.
    ncclUniqueId id;
    std::memset(&id, 1, sizeof(id));
    ncclComm_t c = nullptr;
    float x[2] = {};
    if (ncclCommInitRank(&c, 1, id, 0) != 0) return 10;
    if (ncclAllReduce(x, x, 2, kFloat32, kSum, c, nullptr) != 0) return 11;
    return events() == 1 ? 0 : 12;
  }
  if (events() == static_cast<size_t>(-1)) return fail("run with LD_PRELOAD of the test probe");
  ncclUniqueId id;
  std::memset(&id, 3, sizeof(id));
  ncclComm_t comm = nullptr;
  float x[4] = {};
  if (ncclCommInitRank(&comm, 2, id, 0) != 0) return fail("init");
  if (ncclAllReduce(x, x, 4, kFloat32, kSum, comm, nullptr) != 0) return fail("all-reduce");
  if (events() != 1) return fail("parent did not record");

  const pid_t child = fork();
  if (child == 0) {
    const size_t before = events();
    if (ncclAllReduce(x, x, 4, kFloat32, kSum, comm, nullptr) != 0) _exit(20);  // still works
    _exit(events() == before ? 0 : 21);                                         // not recorded
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return fail("forked child recorded");

  const pid_t execd = fork();
  if (execd == 0) {
    execl("/proc/self/exe", argv[0], "--exec-child", static_cast<char*>(nullptr));
    _exit(30);
  }
  waitpid(execd, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "exec'd child exit %d\n", WEXITSTATUS(status));
    return fail("exec'd child");
  }
  if (ncclAllReduce(x, x, 4, kFloat32, kSum, comm, nullptr) != 0) return fail("after fork");
  if (events() != 2) return fail("parent stopped recording after fork");
  std::printf("fork/exec ok\n");
  return 0;
}
