# SP_SANITIZE: build every target with sanitizers (scripts/sanitizers.sh; tests/fuzz/README.md).
#   address,undefined  AddressSanitizer + UndefinedBehaviorSanitizer, every UB report fatal
#   thread             ThreadSanitizer
# Line tables (-g1) and frame pointers keep the reports' stacks readable at -O3.
set(SP_SANITIZE "" CACHE STRING "Sanitizers for every target: '', 'address,undefined' or 'thread'")
if(SP_SANITIZE)
  if(NOT SP_SANITIZE MATCHES "^(address|undefined|thread)(,(address|undefined|thread))*$")
    message(FATAL_ERROR "SP_SANITIZE='${SP_SANITIZE}': expected address,undefined or thread")
  endif()
  add_compile_options(-fsanitize=${SP_SANITIZE} -fno-omit-frame-pointer -g1)
  add_link_options(-fsanitize=${SP_SANITIZE})
  if(SP_SANITIZE MATCHES "thread")
    # GCC refuses atomic_thread_fence under TSan (-Wtsan), which does not model fences. The
    # seqlocks (heartbeat cell, launch markers) use release/acquire fields instead; the NCCL
    # interposer's drain hand-off keeps its seq_cst fences (a Dekker pair no field order replaces),
    # and the suites run under TSan (runtime, rank_pipeline) do not drive it.
    add_compile_options(-Wno-tsan)
  endif()
  if(SP_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
  message(STATUS "straggler_probe: sanitizers: ${SP_SANITIZE}")
endif()
