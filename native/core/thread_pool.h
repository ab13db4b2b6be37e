// A persistent process-wide thread pool with static-chunked parallel_for.
//
// - Size: env PLATFORM_THREADS if it is a positive integer, else
//   std::thread::hardware_concurrency(). A call may ask for more threads than that (the pool
//   grows, up to kMaxThreads).
// - The calling thread runs chunk 0 itself, so a call with threads == 1 never touches the pool.
// - Calls from several threads are serialised (one parallel region at a time). A call made from
//   inside a parallel region (a pool worker, or the caller while it runs its own chunk) runs its
//   chunks inline on that thread, so nesting can never deadlock.
// - An exception thrown by a chunk is rethrown on the calling thread after all chunks finish.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace platform {

// Non-owning reference to a callable (no allocation, unlike std::function).
template <typename Sig>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT(google-explicit-constructor)
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* obj, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(obj))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(obj_, std::forward<Args>(args)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

constexpr int kMaxThreads = 256;

// Threads a call uses when it does not say: PLATFORM_THREADS or hardware_concurrency().
int default_thread_count();

// Resolves a per-call request: <= 0 means the default; clamped to [1, kMaxThreads].
int resolve_thread_count(int requested);

// True while the current thread runs inside a parallel region.
bool in_parallel_region();

// Runs fn(task) for task in [0, tasks), each task on its own thread (task 0 on the caller).
void run_tasks(int tasks, FunctionRef<void(int)> fn);

// Splits [begin, end) into min(threads, end - begin) near-equal contiguous chunks and runs
// fn(chunk_begin, chunk_end) for each chunk concurrently.
void parallel_for(int64_t begin, int64_t end, int threads, FunctionRef<void(int64_t, int64_t)> fn);

}  // namespace platform
