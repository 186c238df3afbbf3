// libFuzzer harness: PETSIRD files (io/petsird/).
//
// The PETSIRD 0.12 schema alone is longer than the fuzzers' -max_len, so an
// input that does not start with "yardl" is the part after the preamble
// (header and time blocks) and the harness puts the valid preamble in front
// of it; an input that starts with "yardl" is the whole file (preamble
// errors). Checked for every input:
// - opening and reading to the end through `reader` (a file with a small
//   buffer, chunks of 3 events) never throws anything but io_error, and
//   gives the same outcome and the same events as the reader of the same
//   bytes in memory (chunks of 1000);
// - every event of an accepted chunk has detectors in [0, num_detectors),
//   a TOF bin >= 0 and the chunk holds at most the requested events;
// - read_file_parallel and the planned decoding of the GPU reader (on the
//   host; 2 threads, the smallest window) give the same outcome, events
//   and error message as the sequential reader;
// - make_detector_table, tof_parameters of pair [0][0] and efficiency_model
//   (and its factor for the events read) throw nothing but io_error.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "resproj/io/petsird/petsird.hpp"

namespace {

namespace pe = resproj::io::petsird;
using fuzz::attempt;
using fuzz::outcome;

struct result {
  std::vector<std::int32_t> pairs, delayed_pairs;
  std::vector<std::int16_t> bins, delayed_bins;
  std::size_t blocks = 0;
};

void check_chunk(const pe::event_chunk &c, std::size_t max, std::int32_t num_detectors) {
  FUZZ_CHECK(c.num_events() <= max, "chunk of %zu events, at most %zu asked",
             c.num_events(), max);
  for (const pe::coincidence_arrays *a : {&c.prompts, &c.delayeds}) {
    FUZZ_CHECK(a->pairs.size() == 2 * a->tof_bins.size() &&
                   a->energy_bins.size() == a->pairs.size(),
               "array sizes differ");
    for (const std::int32_t d : a->pairs)
      FUZZ_CHECK(d >= 0 && d < num_detectors, "detector %d of %d", int(d),
                 int(num_detectors));
    for (const std::int16_t b : a->tof_bins)
      FUZZ_CHECK(b >= 0, "TOF bin %d", int(b));
  }
}

template <class MakeReader>
outcome read_everything(MakeReader &&make, std::size_t chunk_size, result &r,
                        pe::header *header) {
  return attempt("reader", [&] {
    pe::reader rd = make();
    if (header != nullptr)
      *header = rd.header();
    pe::event_chunk c;
    while (rd.next_chunk(chunk_size, c)) {
      check_chunk(c, chunk_size, rd.detectors().num_detectors());
      r.pairs.insert(r.pairs.end(), c.prompts.pairs.begin(), c.prompts.pairs.end());
      r.bins.insert(r.bins.end(), c.prompts.tof_bins.begin(), c.prompts.tof_bins.end());
      r.delayed_pairs.insert(r.delayed_pairs.end(), c.delayeds.pairs.begin(),
                             c.delayeds.pairs.end());
      r.delayed_bins.insert(r.delayed_bins.end(), c.delayeds.tof_bins.begin(),
                            c.delayeds.tof_bins.end());
      r.blocks += c.blocks.size();
    }
  });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::vector<std::uint8_t> file;
  if (size < 5 || std::memcmp(data, "yardl", 5) != 0) {
    file.insert(file.end(), pe::yardl_magic, pe::yardl_magic + 5);
    file.insert(file.end(), {1, 0, 0, 0});
    std::size_t n = pe::schema_size;
    while (n >= 0x80) {
      file.push_back(std::uint8_t((n & 0x7f) | 0x80));
      n >>= 7;
    }
    file.push_back(std::uint8_t(n));
    file.insert(file.end(), pe::schema_text, pe::schema_text + pe::schema_size);
  }
  file.insert(file.end(), data, data + size);
  const std::string &path = fuzz::input_file("petsird", file.data(), file.size());

  result from_file, from_memory;
  pe::header h;
  const outcome rf = read_everything(
      [&] {
        return pe::reader(path, pe::read_options{false, 64});
      },
      3, from_file, &h);
  const outcome rm =
      read_everything([&] { return pe::reader(file.data(), file.size(), "memory"); },
                      1000, from_memory, nullptr);
  FUZZ_CHECK(rf != outcome::invalid_argument, "reader threw invalid_argument");
  FUZZ_CHECK(rf == rm, "file reader: %s, memory reader: %s", fuzz::outcome_name(rf),
             fuzz::outcome_name(rm));
  if (rf == outcome::ok)
    FUZZ_CHECK(from_file.pairs == from_memory.pairs &&
                   from_file.bins == from_memory.bins &&
                   from_file.delayed_pairs == from_memory.delayed_pairs &&
                   from_file.delayed_bins == from_memory.delayed_bins &&
                   from_file.blocks == from_memory.blocks,
               "file and memory readers gave different events");

  // Block-parallel decoding: the same outcome, events and first error.
  std::string sequential_error;
  try {
    (void)pe::read_file(path);
  } catch (const resproj::io_error &e) {
    sequential_error = e.what();
  }
  // `read(options)` with 2 threads and the smallest window: the same
  // outcome and first error as the sequential reader.
  const auto same_as_sequential = [&](const char *name, auto &&read) {
    static resproj::thread_pool pool; // threads kept between inputs
    std::string error;
    const outcome r = attempt(name, [&] {
      pe::parallel_read_options o;
      o.threads = 2;
      o.window_bytes = 1;
      o.pool = &pool;
      try {
        read(o);
      } catch (const resproj::io_error &e) {
        error = e.what();
        throw;
      }
    });
    FUZZ_CHECK(r == rf, "%s: %s, sequential: %s", name, fuzz::outcome_name(r),
               fuzz::outcome_name(rf));
    FUZZ_CHECK(error == sequential_error, "%s: errors differ: '%s' / '%s'", name,
               error.c_str(), sequential_error.c_str());
    return r == outcome::ok;
  };
  pe::file_contents par;
  if (same_as_sequential("read_file_parallel", [&](const pe::parallel_read_options &o) {
        par = pe::read_file_parallel(path, o);
      }))
    FUZZ_CHECK(par.events.prompts.pairs == from_file.pairs &&
                   par.events.delayeds.pairs == from_file.delayed_pairs &&
                   par.events.blocks.size() == from_file.blocks,
               "parallel decoding gave other events");
  // Planned decoding (the GPU reader's, on the host).
  pe::detail::host_plan_decoder planned;
  if (same_as_sequential("read_planned", [&](const pe::parallel_read_options &o) {
        (void)pe::detail::read_planned(path, o, planned);
      }))
    FUZZ_CHECK(planned.prompt_pairs == from_file.pairs &&
                   planned.prompt_tof_bins == from_file.bins &&
                   planned.delayed_pairs == from_file.delayed_pairs &&
                   planned.delayed_tof_bins == from_file.delayed_bins,
               "planned decoding gave other events");

  // The header of an opened file, whether or not its time blocks were good.
  bool opened = false;
  (void)attempt("reader (header)", [&] {
    h = pe::reader(file.data(), file.size(), "memory").header();
    opened = true;
  });
  if (!opened)
    return 0;
  const outcome rt =
      attempt("make_detector_table", [&] { (void)pe::make_detector_table(h.scanner); });
  FUZZ_CHECK(rt != outcome::invalid_argument,
             "make_detector_table threw invalid_argument");
  const outcome rtof =
      attempt("tof_parameters", [&] { (void)pe::tof_parameters(h.scanner, 0, 0); });
  FUZZ_CHECK(rtof != outcome::invalid_argument, "tof_parameters threw invalid_argument");
  const outcome re = attempt("efficiency_model", [&] {
    const pe::efficiency_model m(h.scanner);
    float sum = 0;
    for (std::size_t i = 0; i + 1 < from_memory.pairs.size(); i += 2)
      sum += m(from_memory.pairs[i], from_memory.pairs[i + 1]);
    (void)sum;
  });
  FUZZ_CHECK(re != outcome::invalid_argument, "efficiency_model threw invalid_argument");
  return 0;
}
