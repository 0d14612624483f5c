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
  if(SP_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
  message(STATUS "straggler_probe: sanitizers: ${SP_SANITIZE}")
endif()
