// `straggler-probe --lib-path`: where libstraggler_probe.so is, for
//   LD_PRELOAD=$(straggler-probe --lib-path) torchrun ... train.py
#pragma once

namespace sp::cli {

// Prints the library's absolute path on stdout and returns 0; names the places searched on
// stderr and returns 1 when it is nowhere.
int print_lib_path();

}  // namespace sp::cli
