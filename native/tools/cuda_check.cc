// platform-cuda-check: every CUDA kernel launcher of native/backends/cuda/llm/llm_kernels.h against
// a plain host f64 reference on random inputs of awkward sizes (native/tools/cuda/kernel_check.cu).
// Prints one line per check and exits 1 when any fails (or when CUDA itself fails).
//
//   platform-cuda-check [--seed N] [--filter SUBSTRING] [--json OUT]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "cuda/kernel_check.h"

int main(int argc, char** argv) {
  uint64_t seed = 1;
  std::string filter, json;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--json" && i + 1 < argc) json = argv[++i];
    else {
      std::fprintf(stderr, "usage: platform-cuda-check [--seed N] [--filter SUBSTRING] [--json OUT]\n");
      return 2;
    }
  }
  platform::cuda::KernelCheckOptions opt;
  opt.seed = seed;
  opt.filter = filter;
  opt.log = [](const platform::cuda::KernelCheckResult& r) {
    std::printf("%-4s %-18s %-58s err abs %.2e rel %.2e tol %.1e%s%s\n", r.passed ? "ok" : "FAIL", r.name.c_str(),
                r.shape.c_str(), r.max_abs_err, r.max_rel_err, r.tolerance, r.note.empty() ? "" : "  ", r.note.c_str());
    std::fflush(stdout);
  };
  const platform::cuda::KernelCheckReport rep = platform::cuda::run_kernel_checks(opt);
  int failed = 0;
  for (const auto& r : rep.results) failed += r.passed ? 0 : 1;
  std::printf("\n%s: %zu checks, %d failed%s%s\n", rep.device.c_str(), rep.results.size(), failed,
              rep.error.empty() ? "" : "; error: ", rep.error.c_str());
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.4e", v);
    return std::isfinite(v) ? std::string(b) : std::string("null");
  };
  if (!json.empty()) {
    std::ofstream f(json);
    f << "{\"device\": \"" << rep.device << "\", \"failed\": " << failed << ", \"error\": \"";
    for (char c : rep.error) f << (c == '"' || c == '\\' ? '_' : c);
    f << "\", \"results\": [\n";
    for (size_t i = 0; i < rep.results.size(); ++i) {
      const auto& r = rep.results[i];
      f << (i ? ",\n" : "") << "  {\"name\": \"" << r.name << "\", \"shape\": \"" << r.shape << "\", \"max_abs_err\": "
        << num(r.max_abs_err) << ", \"max_rel_err\": " << num(r.max_rel_err) << ", \"tolerance\": " << num(r.tolerance)
        << ", \"passed\": " << (r.passed ? "true" : "false") << "}";
    }
    f << "\n]}\n";
  }
  return failed == 0 && rep.error.empty() ? 0 : 1;
}
