// Device memory bandwidth on device 0, the bound that decode speed is compared against
// (platform-llm-bench, bench/cuda/NOTES.md). Plain C++ declarations; defined in bandwidth.cu (the
// CUDA build of the tools only, never the addon). Nothing here throws: a CUDA error comes back in
// .error.
#pragma once

#include <cstddef>
#include <string>

namespace platform::cuda {

struct BandwidthResult {
  // Device-to-device cudaMemcpyAsync of `bytes`: (bytes read + bytes written) / time, i.e.
  // 2 * bytes per copy. This is the "measured copy bandwidth" of the issue (GB = 1e9 bytes).
  double copy_rw_gbs = 0;
  // The same copies counting only the bytes read (half of copy_rw_gbs).
  double copy_read_gbs = 0;
  // A read-only streaming kernel (sum-reduce of the buffer, 16-byte loads): bytes read / time.
  // Decode only reads the weights, so this is the tighter bound for it.
  double read_gbs = 0;
  size_t bytes = 0;
  int iters = 0;
  std::string error;  // empty on success
};

// Median of `iters` timed repetitions (CUDA events) after a warm-up, on buffers of `bytes` each
// (use >= 1 GiB so that the 50-60 MB L2 of an H100/H200 does not flatter the figure).
BandwidthResult measure_bandwidth(size_t bytes, int iters);

// measure_bandwidth(bytes, iters).copy_rw_gbs, or a negative value on a CUDA error.
double measure_copy_bandwidth_gbs(size_t bytes, int iters);

}  // namespace platform::cuda
