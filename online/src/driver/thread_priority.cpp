#include "straggler_probe/online/thread_priority.h"

#include <cerrno>
#include <cstring>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace sp::online {

bool lower_this_thread_priority(int increment, std::string* why) {
#if defined(__linux__)
  // PRIO_PROCESS with a thread id sets that thread's nice value only (Linux threads are
  // scheduled one by one; POSIX would mean the whole process).
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int current = getpriority(PRIO_PROCESS, tid);
  if (current == -1 && errno != 0) {
    *why = std::string("cannot read the analysis thread's priority: ") + std::strerror(errno);
    return false;
  }
  const int target = current + increment > 19 ? 19 : current + increment;
  if (target <= current) return true;  // already that low
  if (setpriority(PRIO_PROCESS, tid, target) != 0) {
    *why = std::string("cannot lower the analysis thread's priority: ") + std::strerror(errno);
    return false;
  }
  return true;
#else
  (void)increment;
  *why = "lowering a thread's priority is only done on Linux";
  return false;
#endif
}

}  // namespace sp::online
