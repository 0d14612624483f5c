// Every NCCL profiler plugin API version this library exports, one header each (as NCCL's own
// plugins/profiler/example/nccl/ does). NCCL finds the table as the symbol ncclProfiler_vN,
// newest version first:
//   v1 NCCL 2.23   v2 2.24-2.25   v3 2.26   v4 2.27   v5 2.28   v6 2.29+
// Adding a version: nccl_hooks/README.md, "Adding an NCCL profiler version".
#pragma once

#include "plugin/abi/nccl_profiler_v1.h"
#include "plugin/abi/nccl_profiler_v2.h"
#include "plugin/abi/nccl_profiler_v3.h"
#include "plugin/abi/nccl_profiler_v4.h"
#include "plugin/abi/nccl_profiler_v5.h"
#include "plugin/abi/nccl_profiler_v6.h"
