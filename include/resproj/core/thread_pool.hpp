/// @file
/// @brief The host thread pool: `thread_pool` (persistent worker threads
/// that run one job at a time, the calling thread taking part as worker 0)
/// and `run_parallel_tasks` (numbered tasks handed out to such workers, the
/// first exception rethrown on the caller). Standard library only.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "resproj/core/config.hpp"

RESPROJ_NAMESPACE_BEGIN

/// Persistent host worker threads for repeated parallel jobs (instead of
/// starting threads on every call). `run(n, fn)` calls `fn(0)` on the
/// calling thread and `fn(1) ... fn(n - 1)` on pool threads, and returns
/// when all have returned. Threads are started when first needed (or by
/// `reserve`) and kept until destruction; the destructor stops and joins
/// them.
///
/// Thread safety: calls of `run` and `reserve` on one pool are serialised
/// (a second caller waits); distinct pools are independent.
class thread_pool {
public:
  thread_pool() = default;
  /// Starts `threads` threads now (see `reserve`).
  /// @throws std::system_error if a thread cannot be started.
  explicit thread_pool(unsigned threads) { reserve(threads); }
  thread_pool(const thread_pool &) = delete;
  thread_pool &operator=(const thread_pool &) = delete;
  ~thread_pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto &t : threads_)
      t.join();
  }

  /// Threads started so far (the largest of the `reserve` counts and the
  /// `n - 1` of the `run` calls).
  std::size_t threads() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return threads_.size();
  }

  /// Starts threads until at least `threads` are running (never stops any),
  /// so that the first `run` with `n <= threads + 1` starts none.
  /// @throws std::system_error if a thread cannot be started (the threads
  ///         started before stay in the pool).
  void reserve(unsigned threads) {
    std::lock_guard<std::mutex> serial(run_mutex_);
    grow(threads);
  }

  /// Runs `fn(w)` for every `w` in `[0, n)`: `fn(0)` on the calling thread,
  /// the others on pool threads; blocks until all have returned. Calls with
  /// distinct `w` run concurrently. If any call throws, `run` still waits
  /// for all of them and then rethrows the first exception.
  /// @throws std::system_error if a missing thread cannot be started (then
  ///         `fn` has not been called); whatever `fn` throws.
  template <class Fn> void run(unsigned n, Fn &&fn) {
    using F = std::remove_reference_t<Fn>;
    std::lock_guard<std::mutex> serial(run_mutex_);
    if (n == 0)
      return;
    grow(n - 1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = const_cast<void *>(static_cast<const void *>(&fn));
      job_call_ = [](void *f, unsigned w) { (*static_cast<F *>(f))(w); };
      job_workers_ = n;
      pending_ = n - 1;
      error_ = nullptr;
      ++generation_;
    }
    if (n > 1)
      wake_.notify_all();
    std::exception_ptr caller_error;
    try {
      fn(0u);
    } catch (...) {
      caller_error = std::current_exception();
    }
    std::exception_ptr worker_error;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [this] { return pending_ == 0; });
      job_ = nullptr;
      worker_error = error_;
      error_ = nullptr;
    }
    if (caller_error)
      std::rethrow_exception(caller_error);
    if (worker_error)
      std::rethrow_exception(worker_error);
  }

private:
  /// Starts threads until `count` run; the caller holds `run_mutex_`.
  void grow(unsigned count) {
    std::lock_guard<std::mutex> lock(mutex_);
    while (threads_.size() < count) {
      const unsigned index = unsigned(threads_.size()) + 1;
      threads_.emplace_back([this, index] { loop(index); });
    }
  }

  void loop(unsigned index) {
    std::uint64_t seen = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      seen = generation_; // a thread started for a job takes part in it
      if (job_ != nullptr)
        --seen;
    }
    for (;;) {
      void *job = nullptr;
      void (*call)(void *, unsigned) = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_)
          return;
        seen = generation_;
        if (index >= job_workers_)
          continue; // not needed this time
        job = job_;
        call = job_call_;
      }
      std::exception_ptr error;
      try {
        call(job, index);
      } catch (...) {
        error = std::current_exception();
      }
      bool last = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (error && !error_)
          error_ = error;
        last = --pending_ == 0;
      }
      if (last)
        done_.notify_one();
    }
  }

  mutable std::mutex mutex_;
  std::mutex run_mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> threads_;
  void *job_ = nullptr;
  void (*job_call_)(void *, unsigned) = nullptr;
  unsigned job_workers_ = 0;
  unsigned pending_ = 0;
  std::exception_ptr error_;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
};

/// Runs `task(w, t, failed)` for every task index `t` in `[0, num_tasks)` on
/// `workers` workers, which take the indices in order from a shared
/// counter: worker 0 is the calling thread, the others are threads of
/// `pool`, or threads started for this call when `pool` is null. With one
/// worker (or none) everything runs on the calling thread.
///
/// `task` is called as `task(unsigned w, std::uint64_t t, const
/// std::atomic<bool> &failed)`; calls with the same `w` never overlap.
/// `failed` becomes true once any task has thrown: the workers then stop
/// before their next task, and a long task may poll it to stop early.
///
/// @param num_tasks number of tasks
/// @param workers   number of workers (`w < workers`)
/// @param pool      persistent threads to use, or null (not owned)
/// @param task      the work, called from several threads at once
/// @throws whatever the first failing task threw, after every worker has
///         stopped; std::system_error if a thread cannot be started (the
///         threads started for the call are stopped and joined first).
template <class TaskFn>
void run_parallel_tasks(std::uint64_t num_tasks, unsigned workers, thread_pool *pool,
                        TaskFn &&task) {
  std::atomic<std::uint64_t> next_task{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr first_error;

  auto work = [&](unsigned w) noexcept {
    try {
      while (!failed.load(std::memory_order_relaxed)) {
        const std::uint64_t t = next_task.fetch_add(1, std::memory_order_relaxed);
        if (t >= num_tasks)
          break;
        task(w, t, static_cast<const std::atomic<bool> &>(failed));
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error)
        first_error = std::current_exception();
      failed.store(true, std::memory_order_relaxed);
    }
  };

  if (workers <= 1) {
    work(0);
  } else if (pool != nullptr) {
    pool->run(workers, work);
  } else {
    std::vector<std::thread> threads;
    threads.reserve(workers - 1);
    try {
      for (unsigned w = 1; w < workers; ++w)
        threads.emplace_back(work, w);
    } catch (...) {
      // Thread creation failed: stop and join the ones running, then report.
      failed.store(true);
      for (auto &th : threads)
        th.join();
      throw;
    }
    work(0);
    for (auto &th : threads)
      th.join();
  }
  if (first_error)
    std::rethrow_exception(first_error);
}

RESPROJ_NAMESPACE_END
