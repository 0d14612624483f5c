/* Test-only: shifts this process's CLOCK_REALTIME (the probe clock) by SP_TEST_CLOCK_SHIFT_NS when
   RANK equals SP_TEST_CLOCK_SHIFT_RANK, as a host whose clock is off would. Preloaded into the
   ranks of tests/python/test_clock_sync.py; nothing in the product reads these variables. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec*);
static clock_gettime_fn real_clock_gettime;
static long long shift_ns;

__attribute__((constructor)) static void fake_clock_init(void) {
  real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
  const char* rank = getenv("RANK");
  const char* which = getenv("SP_TEST_CLOCK_SHIFT_RANK");
  const char* shift = getenv("SP_TEST_CLOCK_SHIFT_NS");
  if (rank && which && shift && strcmp(rank, which) == 0) shift_ns = atoll(shift);
}

int clock_gettime(clockid_t id, struct timespec* ts) {
  int rc = real_clock_gettime(id, ts);
  if (rc == 0 && id == CLOCK_REALTIME && shift_ns != 0) {
    long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + shift_ns;
    ts->tv_sec = (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
  }
  return rc;
}
