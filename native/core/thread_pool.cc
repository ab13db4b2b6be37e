#include "thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define PLATFORM_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define PLATFORM_CPU_RELAX() __asm__ volatile("yield")
#else
#define PLATFORM_CPU_RELAX() ((void)0)
#endif

namespace platform {
namespace {

thread_local bool t_in_region = false;

// Short spins before blocking keep back-to-back regions (one per GEMM K block) cheap without
// burning a core when the pool is idle.
constexpr int kSpinIterations = 4000;

class ThreadPool {
 public:
  // Called with dispatch_mutex_ held by the public entry point.
  void run(int tasks, FunctionRef<void(int)> fn) {
    ensure_workers(tasks - 1);
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      fn_ = &fn;
      tasks_ = tasks;
      error_ = nullptr;
      remaining_.store(tasks - 1, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    work_cv_.notify_all();

    t_in_region = true;
    try {
      fn(0);
    } catch (...) {
      record_error(std::current_exception());
    }
    t_in_region = false;

    for (int i = 0; i < kSpinIterations && remaining_.load(std::memory_order_acquire) != 0; ++i) {
      PLATFORM_CPU_RELAX();
    }
    if (remaining_.load(std::memory_order_acquire) != 0) {
      std::unique_lock<std::mutex> lock(state_mutex_);
      done_cv_.wait(lock, [&] { return remaining_.load(std::memory_order_acquire) == 0; });
    }
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      error = error_;
      error_ = nullptr;
      fn_ = nullptr;
    }
    if (error) std::rethrow_exception(error);
  }

  std::mutex& dispatch_mutex() { return dispatch_mutex_; }

 private:
  void ensure_workers(int count) {
    while (static_cast<int>(workers_.size()) < count) {
      const int index = static_cast<int>(workers_.size());
      uint64_t start_generation;
      {
        std::lock_guard<std::mutex> lock(state_mutex_);
        start_generation = generation_.load(std::memory_order_relaxed);
      }
      // Workers live for the whole process (the pool is intentionally never destroyed, so exit
      // never waits on or races with a worker).
      std::thread(&ThreadPool::worker_loop, this, index, start_generation).detach();
      workers_.push_back(index);
    }
  }

  void record_error(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(state_mutex_);
    if (!error_) error_ = e;
  }

  void worker_loop(int index, uint64_t seen) {
    t_in_region = true;  // anything a worker runs that calls parallel_for runs inline
    const int task = index + 1;
    for (;;) {
      for (int i = 0; i < kSpinIterations; ++i) {
        if (generation_.load(std::memory_order_acquire) != seen) break;
        PLATFORM_CPU_RELAX();
      }
      const FunctionRef<void(int)>* fn = nullptr;
      int tasks = 0;
      {
        std::unique_lock<std::mutex> lock(state_mutex_);
        work_cv_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
        // Read one consistent snapshot. A worker that slept through earlier regions can only have
        // missed regions that did not need it (a region needing it cannot complete without it).
        seen = generation_.load(std::memory_order_relaxed);
        fn = fn_;
        tasks = tasks_;
      }
      if (task >= tasks) continue;
      try {
        (*fn)(task);
      } catch (...) {
        record_error(std::current_exception());
      }
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(state_mutex_);
        done_cv_.notify_one();
      }
    }
  }

  std::mutex dispatch_mutex_;  // one region at a time
  std::vector<int> workers_;   // guarded by dispatch_mutex_

  std::mutex state_mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> remaining_{0};
  const FunctionRef<void(int)>* fn_ = nullptr;  // guarded by state_mutex_
  int tasks_ = 0;                               // guarded by state_mutex_
  std::exception_ptr error_;                    // guarded by state_mutex_
};

ThreadPool& pool() {
  static ThreadPool* instance = new ThreadPool();  // never destroyed, see ensure_workers()
  return *instance;
}

int compute_default_threads() {
  if (const char* env = std::getenv("PLATFORM_THREADS")) {
    char* end = nullptr;
    const long value = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && value > 0) {
      return static_cast<int>(std::min<long>(value, kMaxThreads));
    }
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(std::min<unsigned>(hw, kMaxThreads));
}

}  // namespace

int default_thread_count() {
  static const int count = compute_default_threads();
  return count;
}

int resolve_thread_count(int requested) {
  if (requested <= 0) return default_thread_count();
  return std::min(requested, kMaxThreads);
}

bool in_parallel_region() { return t_in_region; }

void run_tasks(int tasks, FunctionRef<void(int)> fn) {
  if (tasks <= 0) return;
  if (tasks == 1 || t_in_region) {
    for (int t = 0; t < tasks; ++t) fn(t);
    return;
  }
  ThreadPool& p = pool();
  std::lock_guard<std::mutex> lock(p.dispatch_mutex());
  if (tasks <= kMaxThreads) {
    p.run(tasks, fn);
    return;
  }
  // More tasks than threads: thread t runs tasks t, t + kMaxThreads, ...
  auto strided = [&](int t) {
    for (int i = t; i < tasks; i += kMaxThreads) fn(i);
  };
  p.run(kMaxThreads, strided);
}

void parallel_for(int64_t begin, int64_t end, int threads, FunctionRef<void(int64_t, int64_t)> fn) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  const int chunks = static_cast<int>(std::min<int64_t>(std::max(threads, 1), n));
  // Static chunking: the first (n % chunks) chunks get one extra element.
  const int64_t base = n / chunks;
  const int64_t extra = n % chunks;
  auto task = [&](int t) {
    const int64_t lo = begin + t * base + std::min<int64_t>(t, extra);
    const int64_t hi = lo + base + (t < extra ? 1 : 0);
    fn(lo, hi);
  };
  run_tasks(chunks, task);
}

}  // namespace platform
