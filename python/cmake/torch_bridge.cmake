# straggler_probe._c10d: compiled against the torch installed in the build's Python, with torch's
# own headers (incl. its bundled pybind11) and its C++ ABI, because a c10d::Store object crosses
# from torch's bindings into this module. Not via find_package(Torch): that wants CUDA tooling
# for a CUDA build of torch, and this bridge needs only the CPU libraries.
option(SP_BUILD_TORCH_BRIDGE "Build straggler_probe._c10d against the installed torch" ON)
if(NOT SP_BUILD_TORCH_BRIDGE)
  return()
endif()

execute_process(
  COMMAND ${Python3_EXECUTABLE} -c
    "import os, torch; print(os.path.dirname(torch.__file__)); print(int(torch._C._GLIBCXX_USE_CXX11_ABI)); print(torch.__version__)"
  OUTPUT_VARIABLE _sp_torch_info OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _sp_torch_rc ERROR_QUIET)
if(NOT _sp_torch_rc EQUAL 0)
  message(STATUS "straggler_probe: torch not importable at build time: no _c10d bridge "
                 "(the transport will drive the store from a Python thread)")
  return()
endif()
string(REPLACE "\n" ";" _sp_torch_info "${_sp_torch_info}")
list(GET _sp_torch_info 0 SP_TORCH_DIR)
list(GET _sp_torch_info 1 SP_TORCH_CXX11_ABI)
list(GET _sp_torch_info 2 SP_TORCH_VERSION)

find_library(SP_TORCH_CPU_LIB torch_cpu PATHS ${SP_TORCH_DIR}/lib NO_DEFAULT_PATH)
find_library(SP_C10_LIB c10 PATHS ${SP_TORCH_DIR}/lib NO_DEFAULT_PATH)
if(NOT SP_TORCH_CPU_LIB OR NOT SP_C10_LIB OR NOT EXISTS ${SP_TORCH_DIR}/include/torch/csrc/distributed/c10d/Store.hpp)
  message(STATUS "straggler_probe: torch ${SP_TORCH_VERSION} lacks c10d headers or libraries: no _c10d bridge")
  return()
endif()
message(STATUS "straggler_probe: _c10d bridge against torch ${SP_TORCH_VERSION} (${SP_TORCH_DIR})")

# The adapter itself (c10d::Store as an sp_kv_store, and TCPStore clients for bench/scale), with
# torch's headers and ABI; the _c10d module and bench/scale link it.
add_library(sp_c10d_kv_store STATIC src/c10d/c10d_kv_store.cpp)
set_target_properties(sp_c10d_kv_store PROPERTIES POSITION_INDEPENDENT_CODE ON
                      CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
# torch's headers are third-party: SYSTEM, so our warning policy does not apply to them.
target_include_directories(sp_c10d_kv_store SYSTEM PUBLIC
  ${SP_TORCH_DIR}/include ${SP_TORCH_DIR}/include/torch/csrc/api/include)
# src/c10d: the torch bridge's sources (this adapter, the _c10d module's); src: record_entry.h,
# which _core shares with it.
target_include_directories(sp_c10d_kv_store PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/src/c10d
                           ${CMAKE_CURRENT_SOURCE_DIR}/src
                           ${PROJECT_SOURCE_DIR}/rank_pipeline/include)
target_compile_definitions(sp_c10d_kv_store PUBLIC _GLIBCXX_USE_CXX11_ABI=${SP_TORCH_CXX11_ABI})
target_link_libraries(sp_c10d_kv_store PUBLIC ${SP_TORCH_CPU_LIB} ${SP_C10_LIB})
sp_set_warnings(sp_c10d_kv_store)
set(SP_TORCH_CXX11_ABI ${SP_TORCH_CXX11_ABI} CACHE INTERNAL "torch's _GLIBCXX_USE_CXX11_ABI")
set(SP_TORCH_LIB_DIR ${SP_TORCH_DIR}/lib CACHE INTERNAL "torch's library folder")

Python3_add_library(sp_python_c10d MODULE WITH_SOABI src/c10d/c10d_store.cpp
                    src/c10d/work_stamp.cpp src/c10d/group_observer.cpp src/c10d/observed_ops.cpp)
# C++ pre/post hooks on a ProcessGroup (src/c10d/group_observer.h) need torch's hook API with the
# op id that pairs a pre-hook with its post-hook (torch 2.15); without it the Python hooks stay.
file(STRINGS ${SP_TORCH_DIR}/include/torch/csrc/distributed/c10d/ProcessGroup.hpp
     _sp_pg_hooks REGEX "registerPreHook")
set(_sp_hook_args "")
if(EXISTS ${SP_TORCH_DIR}/include/torch/csrc/distributed/c10d/Hooks.hpp)
  file(STRINGS ${SP_TORCH_DIR}/include/torch/csrc/distributed/c10d/Hooks.hpp
       _sp_hook_args REGEX "int64_t op_id")
endif()
if(_sp_pg_hooks AND _sp_hook_args)
  target_compile_definitions(sp_python_c10d PRIVATE SP_C10D_GROUP_HOOKS=1)
  message(STATUS "straggler_probe: _c10d observes process groups in C++ (torch's pre/post hooks)")
endif()
target_include_directories(sp_python_c10d PRIVATE ${PROJECT_SOURCE_DIR}/runtime/include)
set_target_properties(sp_python_c10d PROPERTIES
  OUTPUT_NAME _c10d
  LIBRARY_OUTPUT_DIRECTORY ${SP_PYTHON_PACKAGE_DIR}
  CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
  # torch's libraries are found where torch is, wherever the package is installed
  INSTALL_RPATH "$ORIGIN/../torch/lib" BUILD_RPATH "${SP_TORCH_DIR}/lib")
target_link_libraries(sp_python_c10d PRIVATE sp_c10d_kv_store)
sp_set_warnings(sp_python_c10d)
