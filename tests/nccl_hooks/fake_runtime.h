/* Test stand-in for the runtime's C ABI (sp_record, sp_intern, sp_mark_step, ...), linked into
 * the test preload library in place of the real core: what the GPU layers record is kept in memory
 * and read back by the test program through the sp_test_* functions. */
#ifndef SP_TESTS_FAKE_RUNTIME_H_
#define SP_TESTS_FAKE_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#include "straggler_probe/probe.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef size_t (*sp_test_events_fn)(sp_event* out, size_t capacity);
typedef const char* (*sp_test_name_fn)(uint32_t id);
typedef void (*sp_test_clear_fn)(void);
typedef size_t (*sp_test_marks_fn)(int64_t* out, size_t capacity);
typedef int (*sp_test_inits_fn)(void);

SP_API size_t sp_test_events(sp_event* out, size_t capacity);
SP_API const char* sp_test_name(uint32_t id);
SP_API void sp_test_clear(void);
SP_API size_t sp_test_marks(int64_t* out, size_t capacity);
SP_API int sp_test_inits(void);

#ifdef __cplusplus
}

#include <vector>

/* What the stand-in runtime recorded so far (for tests linked with it). */
inline std::vector<sp_event> sp_test_recorded() {
  std::vector<sp_event> out(sp_test_events(nullptr, 0));
  sp_test_events(out.data(), out.size());
  return out;
}
#endif

#endif
