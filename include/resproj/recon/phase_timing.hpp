/// @file
/// @brief Wall-clock phase table of a reconstruction pipeline (file read,
/// event preparation, corrections, sensitivity, OSEM, output): each phase's
/// seconds and, where it has one, its work count (events, LORs) for a
/// rate. Plain C++.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "resproj/core/config.hpp"

RESPROJ_NAMESPACE_BEGIN
namespace recon {

/// One timed phase.
struct phase {
  std::string key;  ///< short name (e.g. benchmark counters)
  std::string name; ///< what the phase did
  double seconds = 0;
  double items = 0;        ///< work done (0: no rate)
  std::string item_name;   ///< "events", "LORs", ...
  bool overlapped = false; ///< ran concurrently with other phases (not in the sum)
};

/// Phases of a pipeline, in the order they ran.
struct phase_table {
  std::vector<phase> phases;

  /// Records a phase: short `key`, description, seconds, work done.
  void add(std::string key, std::string name, double seconds, double items = 0,
           std::string item_name = {}, bool overlapped = false) {
    phases.push_back({std::move(key), std::move(name), seconds, items,
                      std::move(item_name), overlapped});
  }
  /// Sum of the sequential (not overlapped) phases.
  double total() const {
    double t = 0;
    for (const auto &p : phases)
      t += p.overlapped ? 0.0 : p.seconds;
    return t;
  }
  /// Seconds of the phase with key `key` (0 if none).
  double seconds(const std::string &key) const {
    for (const auto &p : phases)
      if (p.key == key)
        return p.seconds;
    return 0;
  }
  /// Prints the table to `f`: seconds, share of the total, rate.
  void print(std::FILE *f) const {
    const double t = total();
    for (const auto &p : phases) {
      std::fprintf(f, "  %-44s %8.3f s", p.name.c_str(), p.seconds);
      if (p.overlapped)
        std::fprintf(f, "  (overlapped)");
      else
        std::fprintf(f, "  %5.1f %%", t > 0 ? 100 * p.seconds / t : 0.0);
      if (p.items > 0 && p.seconds > 0)
        std::fprintf(f, "  %.3g %s/s", p.items / p.seconds, p.item_name.c_str());
      std::fprintf(f, "\n");
    }
    std::fprintf(f, "  %-44s %8.3f s\n", "total", t);
  }
};

/// Host stopwatch: `lap()` returns the seconds since the last lap (or start).
class stopwatch {
public:
  stopwatch() : last_(clock::now()) {}
  /// Seconds since the previous lap (or construction); starts the next.
  double lap() {
    const auto now = clock::now();
    const double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return s;
  }

private:
  using clock = std::chrono::steady_clock;
  clock::time_point last_;
};

/// Adds a phase timed by `w` to `table` when `table` is set (no-op
/// otherwise); `wait` runs first (e.g. a stream synchronisation, so that
/// the phase's queued work is inside its time).
template <class Wait>
void mark_phase(phase_table *table, stopwatch &w, Wait &&wait, const char *key,
                const char *name, double items = 0, const char *item_name = "") {
  if (!table)
    return;
  wait();
  table->add(key, name, w.lap(), items, item_name);
}

} // namespace recon
RESPROJ_NAMESPACE_END
