// CUDA graph capture in progress in this process, as far as the probe has been told.
//
// While a thread captures a graph in the global capture mode (torch.cuda.graph's default), an
// event query or synchronisation from any other thread in global mode is an error that
// invalidates the capture (PyTorch's caching allocator defers its own queries for this reason).
// So the probe's background pollers (the interposer's stream timer; the Python package's
// CUDA-event resolver keeps its own count) query nothing while a capture is under way. Whoever
// captures says so: the Python package wraps torch.cuda.CUDAGraph.capture_begin/_end and calls
// sp_gpu_graph_capture (cupti_c_api.h); a C++ trainer can call it too.
#pragma once

#include <cstdint>

namespace sp::gpu {

void graph_capture_begin();
void graph_capture_end();  // unbalanced ends are ignored
bool graph_capture_underway();
// Captures begun so far (for the stats).
uint64_t graph_captures_begun();
// Tests.
void reset_graph_capture_for_tests();

}  // namespace sp::gpu
