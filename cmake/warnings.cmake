# sp_set_warnings(target): the project's warning policy, applied to every target we own.
function(sp_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                         -Wno-sign-conversion -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
                         -Woverloaded-virtual -Wnull-dereference -Wdouble-promotion -Wformat=2)
  if(SP_SANITIZE)
    # The sanitizers' instrumentation defeats GCC's flow analysis: -Wnull-dereference then fires
    # inside system headers (nlohmann/json's is_string() under TSan). The plain build keeps it.
    target_compile_options(${target} PRIVATE -Wno-null-dereference)
  endif()
  if(SP_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
