// Everything nccl_hooks/ asks of the GPU capture: this header and graph_capture.h are the whole
// nccl_hooks -> cupti interface (docs/ARCHITECTURE.md; events reach the runtime through
// runtime/'s straggler_probe/event_sink.h). Four calls, none of which blocks:
//   - start capture when CUDA is surely in the process (a communicator was made);
//   - ask for a flush at a step end (GPU records leave the hot path);
//   - bracket an NCCL operation's launch on the launching thread, so that CUPTI tags its kernel
//     with the operation (external correlation; counted as nccl_kernels).
#pragma once

#include <cstdint>

namespace sp::gpu {

// Starts CUPTI capture (idempotent; one warning when unavailable).
void capture_start();
// At a step end: the flush thread processes now. Never blocks.
void capture_request_flush();
// Pushes / pops the NCCL operation `op` on this thread's external-correlation stack (no-ops
// while capture is off; a pop only undoes this thread's push).
void tag_nccl_op(uint64_t op);
void untag_nccl_op();

}  // namespace sp::gpu
