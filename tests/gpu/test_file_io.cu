// gpu::device_file_io and the device format readers / writers:
// round trips device -> file -> device for raw, .npy, NIfTI and list-mode;
// offsets, 0/1-byte reads, sizes not a multiple of the task size, thread
// counts, path errors, truncated files, host pointers, GDS or fallback.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/expect.hpp"
#include "common/files.hpp"
#include "gpu/gpu_test_util.hpp"
#include "io/special_files.hpp"
#include "resproj/gpu/file_io.cuh"

namespace {

namespace gpu = resproj::gpu;
namespace io = resproj::io;
using resproj_test::expect_invalid;
using resproj_test::expect_io_error;
using resproj_test::temp_dir;

std::vector<unsigned char> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto &b : v)
    b = static_cast<unsigned char>(rng());
  return v;
}

template <class T>
gpu::device_buffer<T> upload(const std::vector<T> &host, gpu::stream &s) {
  gpu::device_buffer<T> b(host.size(), s);
  if (!host.empty())
    b.copy_from_host(resproj::span<const T>(host.data(), host.size()), s);
  return b;
}

gpu::file_io_options small_tasks(unsigned threads,
                                 gpu::gds_mode mode = gpu::gds_mode::bounce) {
  gpu::file_io_options o;
  o.threads = threads;
  o.task_bytes = 64 << 10; // many tasks for a few hundred KiB
  o.small_bytes = 4 << 10;
  o.gds = mode;
  o.map_chunk_bytes = 64 << 10;
  return o;
}

/// The read variants every read test runs over (each must give the same
/// bytes): bounce path with persistent workers, bounce with threads started
/// per call, 2 and 4 buffers, and the page-cache DMA path.
struct read_variant {
  const char *name;
  void (*apply)(gpu::file_io_options &);
};
const std::vector<read_variant> &read_variants() {
  static const std::vector<read_variant> v{
      {"bounce/persistent", [](gpu::file_io_options &) {}},
      {"bounce/per-call-threads",
       [](gpu::file_io_options &o) { o.persistent_threads = false; }},
      {"bounce/2-buffers", [](gpu::file_io_options &o) { o.buffers_per_worker = 2; }},
      {"bounce/4-buffers", [](gpu::file_io_options &o) { o.buffers_per_worker = 4; }},
      {"mapped", [](gpu::file_io_options &o) { o.reads = gpu::read_path::mapped; }},
      {"mapped/depth-1",
       [](gpu::file_io_options &o) {
         o.reads = gpu::read_path::mapped;
         o.map_depth = 1;
         o.map_chunk_bytes = 10000; // rounded up to whole pages
       }},
  };
  return v;
}

gpu::file_io_options variant_options(const read_variant &v, unsigned threads) {
  auto o = small_tasks(threads);
  v.apply(o);
  return o;
}

/// The method a read of the variant must report: mapped, or bounce with the
/// reason when the mapped path is not available here.
void expect_method(const gpu::file_io_result &r, const gpu::file_io_options &o) {
  if (o.reads == gpu::read_path::mapped && r.method == gpu::io_method::mapped) {
    // Chunks that could not be registered are copied as pageable memory:
    // still correct (the bytes are checked), but worth seeing in the log.
    static bool told = false;
    if (!r.map_problem.empty() && !told)
      std::cout << "[ info ] mapped read path: " << r.map_problem << "\n";
    told = told || !r.map_problem.empty();
    return;
  }
  EXPECT_EQ(r.method, gpu::io_method::bounce);
  if (o.reads == gpu::read_path::mapped) {
    EXPECT_FALSE(r.map_problem.empty());
    static bool said = false;
    if (!said)
      std::cout << "[ info ] mapped read path fell back: " << r.map_problem << "\n";
    said = true;
  } else {
    EXPECT_TRUE(r.map_problem.empty());
  }
}

TEST_F(GpuTest, ReadRangesForThreadCountsAndOddSizes) {
  temp_dir dir;
  const std::string path = dir.file("data.bin");
  const std::size_t size = 1000003; // not a multiple of the task size
  const auto bytes = random_bytes(size, 1);
  resproj_test::write_bytes(path, bytes);
  gpu::stream s;
  std::vector<std::vector<unsigned char>> results;
  for (const auto &variant : read_variants())
    for (unsigned threads : {1u, 2u, 5u, 16u}) {
      const auto opt = variant_options(variant, threads);
      gpu::device_file_io reader(opt);
      // Offsets: 0, inside the first page, exactly one page, and one that
      // leaves a range ending inside a page.
      for (std::uint64_t offset : {std::uint64_t(0), std::uint64_t(12345),
                                   std::uint64_t(4096), std::uint64_t(65537)}) {
        gpu::device_buffer<unsigned char> dst(size - offset, s);
        dst.fill(0xAB, s);
        const auto r = reader.read(path, offset, dst, s);
        expect_method(r, opt);
        EXPECT_EQ(r.bytes, size - offset);
        if (r.method == gpu::io_method::bounce)
          EXPECT_EQ(r.threads,
                    std::min<unsigned>(threads,
                                       unsigned((size - offset - 1) / (64 << 10) + 1)));
        else
          EXPECT_LE(r.threads, threads);
        const auto got = download(dst, s);
        ASSERT_TRUE(std::equal(got.begin(), got.end(), bytes.begin() + offset))
            << variant.name << ", " << threads << " threads, offset " << offset;
        if (offset == 0)
          results.push_back(got);
      }
      // A range that ends before the end of the file, mid-page.
      gpu::device_buffer<unsigned char> part(300001, s);
      expect_method(reader.read(path, 5000, part, s), opt);
      const auto got = download(part, s);
      ASSERT_TRUE(std::equal(got.begin(), got.end(), bytes.begin() + 5000))
          << variant.name << ", " << threads << " threads, partial range";
    }
  for (const auto &r : results)
    EXPECT_EQ(r, results.front());
}

TEST_F(GpuTest, ZeroOneAndSmallReads) {
  temp_dir dir;
  const std::string path = dir.file("small.bin");
  const auto bytes = random_bytes(5000, 2);
  resproj_test::write_bytes(path, bytes);
  gpu::stream s;
  gpu::device_file_io reader(small_tasks(4));
  gpu::device_buffer<unsigned char> dst(bytes.size(), s);
  dst.fill(0, s);
  auto r = reader.read(path, 0, dst.data(), 0, s);
  EXPECT_EQ(r.method, gpu::io_method::none);
  EXPECT_EQ(r.bytes, 0u);
  r = reader.read(path, 4999, dst.data(), 1, s);
  EXPECT_EQ(r.bytes, 1u);
  EXPECT_EQ(download(dst, s)[0], bytes[4999]);
  r = reader.read(path, 100, dst.data(), 3000, s); // below small_bytes: one buffer
  EXPECT_EQ(r.threads, 1u);
  auto got = download(dst, s);
  EXPECT_TRUE(std::equal(got.begin(), got.begin() + 3000, bytes.begin() + 100));
  // Repeated small reads reuse the buffer: each lands where it should.
  for (std::size_t k = 0; k < 5; ++k)
    reader.read(path, 1000 * k, dst.data() + 1000 * k, 1000, s);
  got = download(dst, s);
  EXPECT_TRUE(std::equal(got.begin(), got.begin() + 5000, bytes.begin()));
  // Zero bytes into null: allowed, the file must still exist.
  EXPECT_EQ(gpu::read_file(path, 0, nullptr, 0, s).bytes, 0u);
  expect_io_error([&] { gpu::read_file(dir.file("none"), 0, nullptr, 0, s); }, {"none"});
}

TEST_F(GpuTest, PathErrorsTruncationAndHostPointers) {
  temp_dir dir;
  const std::string path = dir.file("short.bin");
  const auto bytes = random_bytes(100000, 3);
  resproj_test::write_bytes(path, bytes);
  gpu::stream s;
  gpu::device_file_io reader(small_tasks(4));
  gpu::device_buffer<unsigned char> dst(200000, s);
  dst.fill(0x5A, s);
  expect_io_error([&] { reader.read(dir.file("missing.bin"), 0, dst.data(), 10, s); },
                  {"missing.bin"});
  expect_io_error([&] { reader.read(dir.dir(), 0, dst.data(), 10, s); }, {"directory"});
  expect_io_error([&] { reader.read(path, 0, dst.data(), 100001, s); },
                  {"short.bin", "100000", "100001"});
  expect_io_error([&] { reader.read(path, 99999, dst.data(), 2, s); }, {"short.bin"});
  const auto untouched = download(dst, s);
  for (unsigned char b : untouched)
    ASSERT_EQ(b, 0x5A);

  std::vector<unsigned char> host(10);
  expect_invalid([&] { reader.read(path, 0, host.data(), 10, s); }, "dst");
  gpu::pinned_buffer<unsigned char> pinned(10);
  expect_invalid([&] { reader.read(path, 0, pinned.data(), 10, s); }, "dst");
  expect_invalid([&] { reader.read(path, 0, nullptr, 10, s); }, "dst");
  expect_invalid([&] { gpu::read_file(path, 0, host.data(), 10, s); }, "dst");
  expect_invalid([&] { reader.write(dir.file("w"), 0, host.data(), 10, s); }, "src");
  expect_invalid([&] { reader.read(path, 0, dst.data(), 10, cudaStreamLegacy); },
                 "stream");
  auto one_buffer = small_tasks(1);
  one_buffer.buffers_per_worker = 1;
  expect_invalid([&] { gpu::device_file_io bad(one_buffer); },
                 "options.buffers_per_worker");
}

TEST_F(GpuTest, WriteRoundTripForThreadCountsAndOffset) {
  temp_dir dir;
  gpu::stream s;
  const auto bytes = random_bytes(777777, 4);
  const auto src = upload(bytes, s);
  for (unsigned threads : {1u, 3u, 8u}) {
    const std::string path = dir.file("out" + std::to_string(threads) + ".bin");
    gpu::device_file_io io(small_tasks(threads));
    const auto r = io.write(path, 0, src, s, true);
    EXPECT_EQ(r.method, gpu::io_method::bounce);
    EXPECT_EQ(r.bytes, bytes.size());
    const std::string file = resproj_test::read_bytes(path);
    ASSERT_EQ(file.size(), bytes.size());
    EXPECT_EQ(std::memcmp(file.data(), bytes.data(), bytes.size()), 0) << threads;
    gpu::device_buffer<unsigned char> back(bytes.size(), s);
    io.read(path, 0, back, s);
    EXPECT_EQ(download(back, s), bytes);
  }
  // Write at an offset keeps the bytes around it.
  const std::string path = dir.file("patch.bin");
  resproj_test::write_bytes(path, std::string(300000, 'x'));
  gpu::device_file_io io(small_tasks(2));
  io.write(path, 1000, src.data(), 200000, s);
  const std::string file = resproj_test::read_bytes(path);
  ASSERT_EQ(file.size(), 300000u);
  EXPECT_EQ(file[999], 'x');
  EXPECT_EQ(file[201000], 'x');
  EXPECT_EQ(std::memcmp(file.data() + 1000, bytes.data(), 200000), 0);
  // One-shot write and a 0-byte write creating an empty file.
  gpu::write_file(dir.file("oneshot.bin"), 0, src, s, true);
  EXPECT_EQ(resproj_test::read_bytes(dir.file("oneshot.bin")).size(), bytes.size());
  EXPECT_EQ(gpu::write_file(dir.file("empty.bin"), 0, nullptr, 0, s, true).bytes, 0u);
  EXPECT_TRUE(resproj_test::read_bytes(dir.file("empty.bin")).empty());
  expect_io_error([&] { io.write(dir.dir(), 0, src, s); }, {"directory"});
}

TEST_F(GpuTest, StreamOrderReadAfterFillAndBeforeUse) {
  // A fill queued before the read must not overwrite the read data; the
  // copy back queued after it must see them.
  temp_dir dir;
  const std::string path = dir.file("order.bin");
  const auto bytes = random_bytes(4 << 20, 5);
  resproj_test::write_bytes(path, bytes);
  gpu::stream s;
  gpu::device_buffer<unsigned char> dst(bytes.size(), s);
  for (const auto &variant : read_variants()) {
    gpu::device_file_io io(variant_options(variant, 4));
    for (int rep = 0; rep < 3; ++rep) {
      dst.fill(0, s);
      if (rep == 0)
        gpu::read_file(path, 0, dst, s, variant_options(variant, 4));
      else
        io.read(path, 0, dst, s);
      ASSERT_EQ(download(dst, s), bytes) << variant.name << " " << rep;
    }
  }
}

TEST_F(GpuTest, MappedReadsFollowFileChangesAndReleaseTheMapping) {
  // The mapped path copies from the page cache: a rewrite between reads is
  // seen, and no registration or mapping outlives a read (the file can be
  // truncated and removed; a later read into a longer range fails cleanly).
  temp_dir dir;
  const std::string path = dir.file("changing.bin");
  gpu::stream s;
  auto opt = small_tasks(3);
  opt.reads = gpu::read_path::mapped;
  gpu::device_file_io io(opt);
  gpu::device_buffer<unsigned char> dst(1 << 20, s);
  for (std::uint32_t seed : {11u, 12u, 13u}) {
    const auto bytes = random_bytes(1 << 20, seed);
    resproj_test::write_bytes(path, bytes);
    const auto r = io.read(path, 0, dst, s);
    expect_method(r, opt);
    ASSERT_EQ(download(dst, s), bytes) << seed;
  }
  resproj_test::write_bytes(path, random_bytes(100000, 14));
  dst.fill(0x33, s);
  expect_io_error([&] { io.read(path, 0, dst, s); }, {"changing.bin"});
  for (unsigned char b : download(dst, s))
    ASSERT_EQ(b, 0x33);
  EXPECT_EQ(std::remove(path.c_str()), 0);
  // Option checks.
  auto bad = opt;
  bad.map_chunk_bytes = 0;
  expect_invalid([&] { gpu::device_file_io x(bad); }, "options.map_chunk_bytes");
  bad = opt;
  bad.map_depth = 0;
  expect_invalid([&] { gpu::device_file_io x(bad); }, "options.map_depth");
  EXPECT_STREQ(gpu::read_path_name(gpu::read_path::mapped), "mapped");
  EXPECT_STREQ(gpu::io_method_name(gpu::io_method::mapped), "mapped");
}

TEST_F(GpuTest, WhicheverPathIsAvailableRunsAndIsReported) {
  temp_dir dir;
  const std::string path = dir.file("gds.bin");
  const auto bytes = random_bytes(3 << 20, 6);
  resproj_test::write_bytes(path, bytes);
  gpu::stream s;
  gpu::device_buffer<unsigned char> dst(bytes.size(), s);
  auto opt = small_tasks(4, gpu::gds_mode::automatic);
  const auto r = gpu::read_file(path, 0, dst, s, opt);
  EXPECT_NE(r.method, gpu::io_method::none);
  EXPECT_EQ(r.bytes, bytes.size());
  EXPECT_EQ(download(dst, s), bytes);
  const bool nvfs = gpu::detail::nvidia_fs_loaded();
  const auto &api = gpu::detail::cufile::api::get();
  std::cout << "[ info ] automatic path: " << gpu::io_method_name(r.method)
            << "; nvidia-fs " << (nvfs ? "loaded" : "absent") << "; cuFile "
            << (api.usable() ? "usable" : api.problem) << "\n";
  if (!nvfs)
    EXPECT_EQ(r.method, gpu::io_method::bounce);
  // Required GDS: either works (and gives the same bytes) or says why not.
  opt.gds = gpu::gds_mode::require;
  dst.fill(0, s);
  try {
    const auto g = gpu::read_file(path, 0, dst, s, opt);
    EXPECT_EQ(g.method, gpu::io_method::gds);
    EXPECT_EQ(download(dst, s), bytes);
  } catch (const resproj::io_error &e) {
    EXPECT_NE(std::string(e.what()).find("GPUDirect Storage"), std::string::npos)
        << e.what();
    std::cout << "[ info ] GDS not available: " << e.what() << "\n";
  }
}

TEST_F(GpuTest, NpyRoundTripAndHeaderErrors) {
  temp_dir dir;
  gpu::stream s;
  gpu::device_file_io io(small_tasks(3));
  std::vector<float> host(30 * 40 * 50);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  for (auto &v : host)
    v = nd(rng);
  const auto src = upload(host, s);
  const std::string path = dir.file("a.npy");
  gpu::write_npy_from_device(io, path, src, {30, 40, 50}, s);
  // The host reader agrees with the device writer.
  io::npy_header h;
  EXPECT_EQ(io::read_npy_vector<float>(path, &h), host);
  EXPECT_EQ(h.shape, (std::vector<std::size_t>{30, 40, 50}));
  io::npy_header h2;
  const auto back = gpu::read_npy_to_device<float>(io, path, s, &h2);
  EXPECT_EQ(h2.shape, h.shape);
  EXPECT_EQ(download(back, s), host);
  // Host-written big-endian file is converted.
  const std::string be = dir.file("be.npy");
  std::vector<double> d{1.5, -2.25, 3e10};
  io::write_npy(be, resproj::span<const double>(d.data(), d.size()), {3});
  std::string bytes = resproj_test::read_bytes(be);
  const auto at = bytes.find("<f8");
  ASSERT_NE(at, std::string::npos);
  bytes[at] = '>';
  const std::size_t off = bytes.size() - 24;
  for (std::size_t i = 0; i < 3; ++i)
    std::reverse(bytes.begin() + off + 8 * i, bytes.begin() + off + 8 * i + 8);
  resproj_test::write_bytes(be, bytes);
  EXPECT_EQ(download(gpu::read_npy_to_device<double>(io, be, s), s), d);
  // Wrong dtype, truncated file, shape mismatch on write.
  expect_io_error([&] { gpu::read_npy_to_device<double>(io, path, s); },
                  {"a.npy", "descr"});
  std::string t = resproj_test::read_bytes(path);
  t.resize(t.size() - 1);
  resproj_test::write_bytes(dir.file("t.npy"), t);
  expect_io_error([&] { gpu::read_npy_to_device<float>(io, dir.file("t.npy"), s); },
                  {"t.npy"});
  expect_invalid([&] { gpu::write_npy_from_device(io, dir.file("x.npy"), src, {7}, s); },
                 "shape");
}

TEST_F(GpuTest, NiftiRoundTrip) {
  temp_dir dir;
  gpu::stream s;
  gpu::device_file_io io(small_tasks(2));
  const resproj::image_geometry g({20, 31, 17}, {2.0, 2.5, 3.0}, {-10.0, 4.0, 7.5});
  std::vector<float> host(std::size_t(g.num_voxels()));
  for (std::size_t i = 0; i < host.size(); ++i)
    host[i] = float(i % 97) * 0.5f - 3.0f;
  gpu::device_image<float> image(g, s);
  image.upload(resproj::span<const float>(host.data(), host.size()), s);
  const std::string path = dir.file("img.nii");
  gpu::write_nifti_from_device(io, path, image, s);
  std::vector<float> check(host.size());
  resproj::image_geometry g2 = g;
  io::read_nifti(path, resproj::span<float>(check.data(), check.size()), &g2);
  EXPECT_EQ(check, host);
  const auto back = gpu::read_nifti_to_device<float>(io, path, s);
  EXPECT_EQ(back.geometry().shape(), g.shape());
  EXPECT_EQ(back.geometry().voxel_size(), g.voxel_size());
  EXPECT_EQ(back.geometry().origin(), g.origin());
  EXPECT_EQ(download(back.buffer(), s), host);
  // float file into a double image: converted on the host.
  const auto as_double = gpu::read_nifti_to_device<double>(io, path, s);
  const auto d = download(as_double.buffer(), s);
  for (std::size_t i = 0; i < host.size(); ++i)
    ASSERT_EQ(d[i], double(host[i]));
  std::string t = resproj_test::read_bytes(path);
  t.resize(t.size() - 4);
  resproj_test::write_bytes(dir.file("t.nii"), t);
  expect_io_error([&] { gpu::read_nifti_to_device<float>(io, dir.file("t.nii"), s); },
                  {"t.nii"});
}

TEST_F(GpuTest, ListmodeAndRawRoundTrip) {
  temp_dir dir;
  gpu::stream s;
  auto mapped = small_tasks(4);
  mapped.reads = gpu::read_path::mapped; // formats read through it too
  gpu::device_file_io io(mapped);
  std::vector<resproj::scanner::listmode_event> events(123457);
  std::mt19937 rng(8);
  for (auto &e : events)
    for (auto &b : e.bytes)
      b = static_cast<unsigned char>(rng());
  const auto src = upload(events, s);
  const std::string path = dir.file("events.lm");
  gpu::write_listmode_from_device(io, path, src, s);
  EXPECT_EQ(io::count_listmode_events(path), events.size());
  const auto back = gpu::read_listmode_to_device(io, path, s);
  const auto got = download(back, s);
  ASSERT_EQ(got.size(), events.size());
  EXPECT_EQ(std::memcmp(got.data(), events.data(), events.size() * 10), 0);
  std::string t = resproj_test::read_bytes(path);
  t.resize(t.size() - 3);
  resproj_test::write_bytes(dir.file("t.lm"), t);
  expect_io_error([&] { gpu::read_listmode_to_device(io, dir.file("t.lm"), s); },
                  {"t.lm", "10"});

  std::vector<std::int32_t> ints(99991);
  for (std::size_t i = 0; i < ints.size(); ++i)
    ints[i] = std::int32_t(i * 2654435761u);
  const auto isrc = upload(ints, s);
  gpu::write_raw_from_device(io, dir.file("ints.raw"), isrc, s);
  std::vector<std::int32_t> host(ints.size());
  io::read_raw(dir.file("ints.raw"),
               resproj::span<std::int32_t>(host.data(), host.size()));
  EXPECT_EQ(host, ints);
  gpu::device_buffer<std::int32_t> iback(ints.size() - 10, s);
  io.read(dir.file("ints.raw"), 40, iback, s);
  EXPECT_TRUE(std::equal(ints.begin() + 10, ints.end(), download(iback, s).begin()));
}

} // namespace

// The device writers replace a file as a whole: an existing file gets the
// new contents entirely, through a temporary name that does not stay
// behind, and a file that cannot be replaced is kept as it was.
TEST_F(GpuTest, DeviceWritersReplaceFilesAsAWhole) {
  temp_dir dir;
  gpu::stream s;
  gpu::device_file_io io(small_tasks(2));
  const std::string path = dir.file("image.nii");
  resproj_test::write_bytes(path, std::string(100000, 'x')); // longer than the image
  const auto geometry = resproj::image_geometry::centred({6, 5, 4}, {1.0, 2.0, 3.0});
  gpu::device_image<float> image(geometry, s);
  image.fill(2.5f, s);
  gpu::write_nifti_from_device(io, path, image, s);
  std::vector<float> back(image.size());
  io::read_nifti(path, resproj::span<float>(back.data(), back.size()));
  EXPECT_EQ(back, std::vector<float>(image.size(), 2.5f));
  EXPECT_LT(io::file_size(path), 100000u);
  const std::vector<std::int32_t> ints = {1, 2, 3};
  const auto isrc = upload(ints, s);
  gpu::write_raw_from_device(io, dir.file("ints.raw"), isrc, s);
  gpu::write_raw_from_device(io, dir.file("ints.raw"), isrc, s); // replaces
  EXPECT_EQ(resproj_test::dir_entries(dir.dir()),
            (std::set<std::string>{"image.nii", "ints.raw"}));
  // A directory in the way: rejected, nothing written.
  std::filesystem::create_directory(dir.file("sub.nii"));
  expect_io_error(
      [&] { gpu::write_nifti_from_device(io, dir.file("sub.nii"), image, s); },
      {"directory"});
  EXPECT_EQ(resproj_test::dir_entries(dir.dir()),
            (std::set<std::string>{"image.nii", "ints.raw", "sub.nii"}));
}
