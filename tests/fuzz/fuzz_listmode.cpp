// libFuzzer harness: list-mode event files (io/listmode_file.hpp) and event
// validation (scanner/listmode.hpp).
//
// The input is the whole file. Checked for every input:
// - count_listmode_events and read_listmode_file succeed exactly when the
//   size is a multiple of 10 bytes (count = size / 10, the events are the
//   file's bytes), else throw io_error.
// - read_listmode_events of a sub-range (chosen from the input) succeeds
//   exactly when the range lies inside the file, writes only dst[0, count)
//   with the file's records, and otherwise throws (io_error for a bad file
//   or range, invalid_argument for a too small dst) without writing.
// - validate_events against small detector and TOF bin counts gives the
//   count and first index of the invalid events (recomputed here), and
//   agrees with validate_events on the split arrays; split_events and
//   pack_events round-trip; a negative detector count is invalid_argument.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "resproj/io/listmode_file.hpp"
#include "resproj/scanner/listmode.hpp"

namespace {

namespace io = resproj::io;
namespace scanner = resproj::scanner;
using fuzz::attempt;
using fuzz::outcome;
using resproj::span;
using scanner::listmode_event;

std::uint32_t le32(const std::uint8_t *p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
         std::uint32_t(p[3]) << 24;
}

void check_validation(const std::vector<listmode_event> &events, const std::uint8_t *data,
                      std::int64_t num_detectors, int num_tof_bins) {
  const span<const listmode_event> ev(events.data(), events.size());
  resproj::event_check_result r{};
  const outcome o = attempt("validate_events", [&] {
    r = scanner::validate_events(ev, num_detectors, num_tof_bins);
  });
  FUZZ_CHECK(o == outcome::ok, "validate_events(%lld, %d): %s",
             static_cast<long long>(num_detectors), num_tof_bins, fuzz::outcome_name(o));
  // Recomputed from the raw bytes.
  std::size_t bad = 0, first = events.size();
  for (std::size_t i = 0; i < events.size(); ++i) {
    const std::uint8_t *rec = data + 10 * i;
    const std::int64_t a = le32(rec), b = le32(rec + 4);
    const int bin = std::int16_t(std::uint16_t(rec[8] | rec[9] << 8));
    const bool valid = a < num_detectors && b < num_detectors &&
                       (num_tof_bins <= 0 || (bin >= 0 && bin < num_tof_bins));
    if (!valid) {
      if (bad == 0)
        first = i;
      ++bad;
    }
  }
  FUZZ_CHECK(r.num_invalid == bad && r.first_invalid == first,
             "validate_events(%lld, %d): %zu invalid from %zu, expected %zu from %zu",
             static_cast<long long>(num_detectors), num_tof_bins, r.num_invalid,
             r.first_invalid, bad, first);

  // The split arrays give the same answer while every index fits int32
  // (split_events maps indices >= 2^31 to -1, invalid for any table).
  std::vector<std::int32_t> pairs;
  std::vector<std::int16_t> bins;
  scanner::split_events(events, pairs, bins);
  resproj::event_check_result rs{};
  const outcome os = attempt("validate_events(split)", [&] {
    rs = scanner::validate_events(span<const std::int32_t>(pairs.data(), pairs.size()),
                                  span<const std::int16_t>(bins.data(), bins.size()),
                                  num_detectors, num_tof_bins);
  });
  FUZZ_CHECK(os == outcome::ok, "validate_events(split): %s", fuzz::outcome_name(os));
  if (num_detectors <= (std::int64_t(1) << 31))
    FUZZ_CHECK(rs.num_invalid == r.num_invalid && rs.first_invalid == r.first_invalid,
               "validate_events on split arrays: %zu invalid from %zu, on records %zu "
               "from %zu",
               rs.num_invalid, rs.first_invalid, r.num_invalid, r.first_invalid);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string &path = fuzz::input_file("listmode", data, size);
  const bool whole = size % 10 == 0;
  const std::uint64_t total = size / 10;

  std::uint64_t count = 0;
  const outcome oc =
      attempt("count_listmode_events", [&] { count = io::count_listmode_events(path); });
  FUZZ_CHECK(oc == (whole ? outcome::ok : outcome::io_error),
             "count_listmode_events of %zu bytes: %s", size, fuzz::outcome_name(oc));
  if (oc == outcome::ok)
    FUZZ_CHECK(count == total, "count_listmode_events: %llu for %zu bytes",
               static_cast<unsigned long long>(count), size);

  std::vector<listmode_event> events;
  const outcome of =
      attempt("read_listmode_file", [&] { events = io::read_listmode_file(path); });
  FUZZ_CHECK(of == (whole ? outcome::ok : outcome::io_error),
             "read_listmode_file of %zu bytes: %s", size, fuzz::outcome_name(of));
  if (of == outcome::ok) {
    FUZZ_CHECK(events.size() == total, "read_listmode_file: %zu events for %zu bytes",
               events.size(), size);
    FUZZ_CHECK(size == 0 || std::memcmp(events.data(), data, size) == 0,
               "read_listmode_file: events differ from the file");
  }

  // A sub-range: [first, first + n), n one past the end when the first byte
  // is odd; dst holds n events and 2 spare ones that must stay untouched.
  {
    const std::uint64_t first = total / 3;
    const std::size_t n = std::size_t(total - first) + (size > 0 ? (data[0] & 1u) : 0u);
    auto dst = fuzz::sentinel_vector<listmode_event>(n + 2);
    const outcome o = attempt("read_listmode_events", [&] {
      io::read_listmode_events(path, first, n,
                               span<listmode_event>(dst.data(), dst.size()));
    });
    const bool inside = whole && first + n <= total;
    FUZZ_CHECK(o == (inside ? outcome::ok : outcome::io_error),
               "read_listmode_events(%llu, %zu) of %zu bytes: %s",
               static_cast<unsigned long long>(first), n, size, fuzz::outcome_name(o));
    if (o == outcome::ok) {
      FUZZ_CHECK(n == 0 || std::memcmp(dst.data(), data + 10 * first, 10 * n) == 0,
                 "read_listmode_events: events differ from the file");
      FUZZ_CHECK(fuzz::untouched(dst.data() + n, 2 * sizeof(listmode_event)),
                 "read_listmode_events wrote past dst[count)");
    } else {
      FUZZ_CHECK(fuzz::untouched(dst.data(), dst.size() * sizeof(listmode_event)),
                 "read_listmode_events wrote to dst and threw");
    }
    // Too small a destination: an argument error before the file is read.
    if (n > 0) {
      auto small = fuzz::sentinel_vector<listmode_event>(n - 1);
      const outcome os = attempt("read_listmode_events(small)", [&] {
        io::read_listmode_events(path, first, n,
                                 span<listmode_event>(small.data(), small.size()));
      });
      FUZZ_CHECK(os == outcome::invalid_argument,
                 "read_listmode_events into %zu of %zu: %s", n - 1, n,
                 fuzz::outcome_name(os));
    }
    // A range far past the end (offset overflows 64 bits).
    listmode_event one{};
    const outcome of2 = attempt("read_listmode_events(far)", [&] {
      io::read_listmode_events(path, ~std::uint64_t(0) / 4, 1,
                               span<listmode_event>(&one, 1));
    });
    FUZZ_CHECK(of2 == outcome::io_error, "read_listmode_events far past the end: %s",
               fuzz::outcome_name(of2));
  }

  if (of == outcome::ok) {
    check_validation(events, data, 16, 5);
    check_validation(events, data, 16, 0);
    check_validation(events, data, 0, 3);
    check_validation(events, data, std::int64_t(1) << 31, 1 << 15);
    check_validation(events, data, std::int64_t(1) << 33, 2);
    const outcome on = attempt("validate_events(-1)", [&] {
      (void)scanner::validate_events(
          span<const listmode_event>(events.data(), events.size()), -1, 0);
    });
    FUZZ_CHECK(on == outcome::invalid_argument, "validate_events(num_detectors = -1): %s",
               fuzz::outcome_name(on));

    // split / pack round trip (exact while the indices fit int32).
    std::vector<std::int32_t> pairs;
    std::vector<std::int16_t> bins;
    scanner::split_events(events, pairs, bins);
    bool fits = true;
    for (const listmode_event &e : events)
      fits = fits && e.detector_a() <= 0x7fffffffu && e.detector_b() <= 0x7fffffffu;
    const std::vector<listmode_event> packed =
        scanner::pack_events(span<const std::int32_t>(pairs.data(), pairs.size()),
                             span<const std::int16_t>(bins.data(), bins.size()));
    FUZZ_CHECK(packed.size() == events.size(), "pack_events: %zu events from %zu",
               packed.size(), events.size());
    if (fits)
      FUZZ_CHECK(packed.empty() ||
                     std::memcmp(packed.data(), events.data(), 10 * events.size()) == 0,
                 "split_events + pack_events does not round-trip");
  }
  return 0;
}
