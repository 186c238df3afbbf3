// GPU non-TOF projector: agreement with the CPU backend (the library's
// choice and forced kernel variants), graph capture, no allocation across
// calls, argument checking, streaming. Adjointness is checked for every
// executor by the contract suite (tests/contract).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gpu/gpu_test_data.hpp"
#include "gpu/gpu_test_util.hpp"
#include "resproj/resproj.hpp"

namespace rp = resproj;
namespace gpu = resproj::gpu;

namespace {

using resproj_test_gpu::cylinder_lors;
using resproj_test_gpu::random_lors;
using resproj_test_gpu::random_values;
using resproj_test_gpu::relative_error;

/// Forward projection with a forced kernel variant (no argument checks).
template <class T, class Lors>
void forward_variant(const gpu::kernel_choice &c, gpu::device_image_view<const T> image,
                     const Lors &lors, rp::span<T> out, gpu::stream_ref s) {
  gpu::detail::run_forward(rp::op::non_tof{}, image, lors.normalized(), out, c, s);
}

/// Back projection with a forced kernel variant (no argument checks).
template <class T, class Lors>
void back_variant(const gpu::kernel_choice &c, gpu::device_image_view<T> image,
                  const Lors &lors, rp::span<const T> values, gpu::stream_ref s) {
  gpu::detail::run_back(rp::op::non_tof{}, image, lors.normalized(), values, c, s);
}

template <class T> struct tolerance;
template <> struct tolerance<float> { static constexpr double value = 1e-5; };
template <> struct tolerance<double> { static constexpr double value = 1e-12; };

struct problem {
  std::array<std::int64_t, 3> shape;
  std::array<double, 3> voxel;
};

const problem problems[] = {
    {{16, 24, 12}, {2.0, 1.0, 4.0}},
    {{33, 17, 9}, {1.5, 2.5, 3.0}},
    {{1, 40, 40}, {4.0, 1.0, 1.0}},
};

template <class T> class GpuProjector : public GpuTest {};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(GpuProjector, value_types);

/// Runs GPU forward+back and CPU forward+back on the same data.
template <class T>
void compare_with_cpu(const rp::image_geometry &g, const std::vector<T> &starts,
                      const std::vector<T> &ends, std::uint32_t seed) {
  const std::size_t n = starts.size() / 3;
  const auto image = random_values<T>(std::size_t(g.num_voxels()), seed);
  const auto values = random_values<T>(n, seed + 1);

  std::vector<T> cpu_fwd(n), cpu_back(image.size(), T(0));
  rp::cpu::forward(rp::op::non_tof{}, rp::image_view<const T>(image.data(), g),
                   rp::lor_view<const T>(starts.data(), ends.data(), n),
                   rp::span<T>(cpu_fwd.data(), n));
  rp::cpu::back(rp::op::non_tof{}, rp::image_view<T>(cpu_back.data(), g),
                rp::lor_view<const T>(starts.data(), ends.data(), n),
                rp::span<const T>(values.data(), n));

  gpu::stream s;
  gpu::device_image<T> d_img(g, s);
  d_img.upload(rp::span<const T>(image.data(), image.size()), s);
  auto d_starts =
      gpu::make_device_buffer(rp::span<const T>(starts.data(), starts.size()), s);
  auto d_ends = gpu::make_device_buffer(rp::span<const T>(ends.data(), ends.size()), s);
  auto d_values = gpu::make_device_buffer(rp::span<const T>(values.data(), n), s);
  gpu::device_buffer<T> d_fwd(n, s);
  const rp::lor_view<const T> lors(d_starts.data(), d_ends.data(), n);

  std::vector<T> gpu_fwd(n), gpu_back(image.size());
  // 0: the plain call (the library's choice); else forced lanes per LOR.
  static const int groups[] = {0, 1, 4, 32, 2};
  for (int variant = 0; variant < 5; ++variant) {
    const int g_per_lor = groups[variant];
    gpu::kernel_choice c;
    c.threads_per_lor = g_per_lor;
    c.wide_index = variant == 4; // the 64-bit voxel index path
    d_fwd.fill(T(-1), s);
    if (g_per_lor == 0)
      gpu::forward(rp::op::non_tof{}, d_img, lors, d_fwd.span(), s);
    else
      forward_variant<T>(c, d_img, lors, d_fwd.span(), s);
    d_fwd.copy_to_host(rp::span<T>(gpu_fwd.data(), n), s);
    s.synchronize();
    EXPECT_LT(relative_error(gpu_fwd, cpu_fwd, n / 10000), tolerance<T>::value)
        << "forward, threads_per_lor " << g_per_lor;

    gpu::device_image<T> d_bp(g, s);
    d_bp.zero(s);
    if (g_per_lor == 0)
      gpu::back(rp::op::non_tof{}, d_bp, lors, d_values.cspan(), s);
    else
      back_variant<T>(c, d_bp, lors, d_values.cspan(), s);
    d_bp.download(rp::span<T>(gpu_back.data(), gpu_back.size()), s);
    s.synchronize();
    // Atomic accumulation order differs from the CPU's: compare norms.
    EXPECT_LT(relative_error(gpu_back, cpu_back, image.size()), 10 * tolerance<T>::value)
        << "back, threads_per_lor " << g_per_lor;
  }
}

TYPED_TEST(GpuProjector, MatchesCpuOnRandomLors) {
  using T = TypeParam;
  std::uint32_t seed = 11;
  for (const auto &p : problems) {
    const auto g = rp::image_geometry::centred(p.shape, p.voxel);
    std::vector<T> starts, ends;
    random_lors<T>(20000, g, seed, starts, ends);
    compare_with_cpu<T>(g, starts, ends, seed++);
  }
}

TYPED_TEST(GpuProjector, MatchesCpuOnCylindricalScanner) {
  using T = TypeParam;
  const auto g = rp::image_geometry({20, 20, 10}, {2.0, 2.0, 3.0}, {-19.0, -18.0, -12.0});
  std::vector<T> starts, ends;
  cylinder_lors<T>(g, starts, ends);
  compare_with_cpu<T>(g, starts, ends, 99);
}

/// Fixture data for the single-precision tests below.
struct small_problem {
  rp::image_geometry g = rp::image_geometry::centred({24, 20, 16}, {2.0, 2.0, 2.5});
  std::vector<float> starts, ends, image, values;
  std::size_t n = 0;
  small_problem(std::size_t count = 5000) {
    random_lors<float>(count, g, 3, starts, ends);
    n = starts.size() / 3;
    image = random_values<float>(std::size_t(g.num_voxels()), 4);
    values = random_values<float>(n, 5);
  }
};

/// `small_problem` uploaded: image, LORs, values and an output buffer.
struct resident_problem {
  gpu::stream s;
  gpu::device_image<float> image;
  gpu::device_buffer<float> starts, ends, values, out;
  rp::lor_view<const float> lors;
  explicit resident_problem(const small_problem &p)
      : image(p.g, s), starts(gpu::make_device_buffer(
                           rp::span<const float>(p.starts.data(), p.starts.size()), s)),
        ends(gpu::make_device_buffer(rp::span<const float>(p.ends.data(), p.ends.size()),
                                     s)),
        values(gpu::make_device_buffer(rp::span<const float>(p.values.data(), p.n), s)),
        out(p.n, s), lors(starts.data(), ends.data(), p.n) {
    image.upload(rp::span<const float>(p.image.data(), p.image.size()), s);
  }
};

TEST_F(GpuTest, GraphCaptureReplaysTheSameResult) {
  small_problem p;
  resident_problem r(p);
  auto &s = r.s;
  auto &d_img = r.image;
  auto &d_v = r.values;
  gpu::device_image<float> d_bp(p.g, s);
  gpu::device_buffer<float> d_fwd(p.n, s);
  const rp::lor_view<const float> lors = r.lors;
  s.synchronize();

  // Reference: eager calls, chunked.
  const std::size_t chunk = 777;
  auto enqueue = [&] {
    d_bp.zero(s);
    for (std::size_t first = 0; first < p.n; first += chunk) {
      const std::size_t m = std::min(chunk, p.n - first);
      gpu::forward(rp::op::non_tof{}, d_img, lors.subview(first, m),
                   d_fwd.span().subspan(first, m), s);
      gpu::back(rp::op::non_tof{}, d_bp, lors.subview(first, m),
                d_v.cspan().subspan(first, m), s);
    }
  };
  enqueue();
  std::vector<float> fwd_eager(p.n), bp_eager(p.image.size());
  d_fwd.copy_to_host(rp::span<float>(fwd_eager.data(), p.n), s);
  d_bp.download(rp::span<float>(bp_eager.data(), bp_eager.size()), s);
  s.synchronize();

  d_fwd.fill(0.f, s);
  s.synchronize();
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeGlobal), cudaSuccess);
  enqueue(); // would invalidate the capture if it synchronised or allocated
  ASSERT_EQ(cudaStreamEndCapture(s.get(), &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 3; ++replay) {
    ASSERT_EQ(cudaGraphLaunch(exec, s.get()), cudaSuccess);
    std::vector<float> fwd(p.n), bp(p.image.size());
    d_fwd.copy_to_host(rp::span<float>(fwd.data(), p.n), s);
    d_bp.download(rp::span<float>(bp.data(), bp.size()), s);
    s.synchronize();
    EXPECT_EQ(fwd, fwd_eager) << "replay " << replay;
    EXPECT_LT(relative_error(bp, bp_eager, 0), 1e-6) << "replay " << replay;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(GpuTest, ThousandCallsAllocateNothing) {
  small_problem p(2000);
  resident_problem r(p);
  auto &s = r.s;
  auto &d_img = r.image;
  auto &d_v = r.values;
  gpu::device_buffer<float> d_fwd(p.n, s);
  const rp::lor_view<const float> lors = r.lors;
  gpu::forward(rp::op::non_tof{}, d_img, lors, d_fwd.span(), s); // warm-up (module load)
  s.synchronize();
  std::size_t free_before = 0, free_after = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  const auto pool_before = gpu::pool_used_bytes(d_img.device());
  for (int i = 0; i < 500; ++i) {
    gpu::forward(rp::op::non_tof{}, d_img, lors, d_fwd.span(), s);
    gpu::back(rp::op::non_tof{}, d_img, lors, d_v.cspan(), s);
  }
  s.synchronize();
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  EXPECT_EQ(free_before, free_after);
  EXPECT_EQ(pool_before, gpu::pool_used_bytes(d_img.device()));
}

TEST_F(GpuTest, RejectsBadArgumentsBeforeWriting) {
  small_problem p(1000);
  resident_problem r(p);
  auto &s = r.s;
  auto &d_img = r.image;
  gpu::device_buffer<float> d_out(p.n, s);
  d_out.fill(-7.f, s);
  const rp::lor_view<const float> lors = r.lors;
  const rp::lor_view<const float> host_lors(p.starts.data(), p.ends.data(), p.n);
  std::vector<float> host_out(p.n, -7.f);

  auto expect_invalid = [](auto &&call, const std::string &argument) {
    try {
      call();
      ADD_FAILURE() << "no exception for " << argument;
    } catch (const rp::invalid_argument &e) {
      EXPECT_EQ(e.argument(), argument) << e.what();
    }
  };
  // Host LORs given to the device call.
  const rp::op::non_tof op{};
  // Host LORs given to the device call.
  expect_invalid([&] { gpu::forward(op, d_img, host_lors, d_out.span(), s); },
                 "lors.starts");
  // Host output.
  expect_invalid(
      [&] { gpu::forward(op, d_img, lors, rp::span<float>(host_out.data(), p.n), s); },
      "out");
  // Output too small.
  expect_invalid(
      [&] { gpu::forward(op, d_img, lors, d_out.span().subspan(0, p.n - 1), s); }, "out");
  // Host image memory behind a device view.
  expect_invalid(
      [&] {
        gpu::forward(
            op, gpu::device_image_view<const float>(p.image.data(), p.g, d_img.device()),
            lors, d_out.span(), s);
      },
      "image.data");
  // The legacy default stream.
  expect_invalid(
      [&] {
        gpu::forward(op, d_img, lors, d_out.span(), gpu::stream_ref(cudaStreamLegacy));
      },
      "stream");
  // Bad overrides.
  gpu::tuning bad;
  bad.threads_per_lor = 3;
  expect_invalid([&] { gpu::forward(op, d_img, lors, d_out.span(), s, bad); },
                 "tuning.threads_per_lor");
  bad = {};
  bad.block_size = 48; // not a multiple of 32
  expect_invalid([&] { gpu::forward(op, d_img, lors, d_out.span(), s, bad); },
                 "tuning.block_size");
  bad.block_size = 512; // above 256
  expect_invalid([&] { gpu::forward(op, d_img, lors, d_out.span(), s, bad); },
                 "tuning.block_size");

  std::vector<float> check(p.n);
  d_out.copy_to_host(rp::span<float>(check.data(), p.n), s);
  s.synchronize();
  for (float v : check)
    ASSERT_EQ(v, -7.f) << "a rejected call wrote its output";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);

  // The next valid call works.
  gpu::forward(op, d_img, lors, d_out.span(), s);
  std::vector<float> expected(p.n);
  rp::cpu::forward(op, rp::image_view<const float>(p.image.data(), p.g), host_lors,
                   rp::span<float>(expected.data(), p.n));
  d_out.copy_to_host(rp::span<float>(check.data(), p.n), s);
  s.synchronize();
  EXPECT_LT(relative_error(check, expected, 0), 1e-5);
}

TEST_F(GpuTest, RejectsMemoryOfAnotherDevice) {
  if (gpu::device_count() < 2)
    GTEST_SKIP() << "needs two CUDA devices";
  small_problem p(1000);
  gpu::stream s0;
  gpu::device_image<float> d_img(p.g, s0);
  d_img.zero(s0);
  gpu::device_buffer<float> d_out(p.n, s0);
  d_out.fill(-7.f, s0);
  s0.synchronize();
  std::unique_ptr<gpu::device_buffer<float>> d_s, d_e;
  {
    gpu::device_guard on1(1);
    gpu::stream s1;
    d_s = std::make_unique<gpu::device_buffer<float>>(gpu::make_device_buffer(
        rp::span<const float>(p.starts.data(), p.starts.size()), s1));
    d_e = std::make_unique<gpu::device_buffer<float>>(
        gpu::make_device_buffer(rp::span<const float>(p.ends.data(), p.ends.size()), s1));
    s1.synchronize();
    const rp::lor_view<const float> lors(d_s->data(), d_e->data(), p.n);
    try {
      gpu::forward(rp::op::non_tof{}, d_img, lors, d_out.span(), s0);
      ADD_FAILURE() << "no exception";
    } catch (const rp::invalid_argument &e) {
      EXPECT_EQ(e.argument(), "lors.starts");
    }
    d_s.reset();
    d_e.reset();
    s1.synchronize();
  }
}

class GpuStreamer : public GpuTest, public ::testing::WithParamInterface<std::size_t> {};

TEST_P(GpuStreamer, EqualsResidentCall) {
  const std::size_t chunk = GetParam();
  small_problem p(7001);
  resident_problem r(p);
  auto &s = r.s;
  auto &d_img = r.image;
  auto &d_v = r.values;
  gpu::device_buffer<float> d_fwd(p.n, s);
  const rp::lor_view<const float> lors = r.lors;
  const rp::op::non_tof op{};
  gpu::forward(op, d_img, lors, d_fwd.span(), s);
  gpu::device_image<float> d_bp(p.g, s);
  d_bp.zero(s);
  gpu::back(op, d_bp, lors, d_v.cspan(), s);
  std::vector<float> fwd_ref(p.n), bp_ref(p.image.size());
  d_fwd.copy_to_host(rp::span<float>(fwd_ref.data(), p.n), s);
  d_bp.download(rp::span<float>(bp_ref.data(), bp_ref.size()), s);
  s.synchronize();

  gpu::lor_streamer<float> streamer(chunk);
  const rp::lor_view<const float> host_lors(p.starts.data(), p.ends.data(), p.n);
  // Pageable arrays.
  std::vector<float> fwd(p.n, -1.f);
  streamer.forward(op, d_img, host_lors, rp::span<float>(fwd.data(), p.n), s);
  EXPECT_LT(relative_error(fwd, fwd_ref, 0), 1e-6);
  d_bp.zero(s);
  streamer.back(op, d_bp, host_lors, rp::span<const float>(p.values.data(), p.n), s);
  std::vector<float> bp(p.image.size());
  d_bp.download(rp::span<float>(bp.data(), bp.size()), s);
  s.synchronize();
  EXPECT_LT(relative_error(bp, bp_ref, 0), 1e-6);

  // Pinned arrays are used in place.
  gpu::pinned_buffer<float> ps(p.starts.size()), pe(p.ends.size()), pout(p.n);
  std::copy(p.starts.begin(), p.starts.end(), ps.data());
  std::copy(p.ends.begin(), p.ends.end(), pe.data());
  streamer.forward(op, d_img, rp::lor_view<const float>(ps.data(), pe.data(), p.n),
                   pout.span(), s);
  EXPECT_LT(
      relative_error(std::vector<float>(pout.data(), pout.data() + p.n), fwd_ref, 0),
      1e-6);
}

INSTANTIATE_TEST_SUITE_P(ChunkSizes, GpuStreamer,
                         ::testing::Values(std::size_t(1000), std::size_t(7001),
                                           std::size_t(1024), std::size_t(100000)));

TEST_F(GpuTest, StreamerRejectsDeviceArrays) {
  small_problem p(100);
  gpu::stream s;
  gpu::device_image<float> d_img(p.g, s);
  d_img.zero(s);
  auto d_s =
      gpu::make_device_buffer(rp::span<const float>(p.starts.data(), p.starts.size()), s);
  gpu::lor_streamer<float> streamer(64);
  std::vector<float> out(p.n);
  try {
    streamer.forward(rp::op::non_tof{}, d_img,
                     rp::lor_view<const float>(d_s.data(), p.ends.data(), p.n),
                     rp::span<float>(out.data(), p.n), s);
    ADD_FAILURE() << "no exception";
  } catch (const rp::invalid_argument &e) {
    EXPECT_EQ(e.argument(), "host_lors.starts");
  }
}

} // namespace

namespace {
// Lanes along rows (neighbouring sinogram planes) change only which thread
// takes which LOR: with the same lanes per LOR the values are identical.
TEST_F(GpuTest, RowOrderGivesTheSameValues) {
  small_problem p(6000); // 6000 = 40 rows x 150 columns
  resident_problem r(p);
  auto &s = r.s;
  auto &d_img = r.image;
  auto &d_v = r.values;
  gpu::device_image<float> d_bp(p.g, s), d_bp_rows(p.g, s);
  gpu::device_buffer<float> d_a(p.n, s), d_b(p.n, s);
  const rp::lor_view<const float> lors = r.lors;
  gpu::kernel_choice plain, rows;
  plain.threads_per_lor = rows.threads_per_lor = 4;
  rows.rows = 40;
  d_b.fill(-1.f, s);
  d_bp.zero(s);
  d_bp_rows.zero(s);
  forward_variant<float>(plain, d_img, lors, d_a.span(), s);
  forward_variant<float>(rows, d_img, lors, d_b.span(), s);
  back_variant<float>(plain, d_bp, lors, d_v.cspan(), s);
  back_variant<float>(rows, d_bp_rows, lors, d_v.cspan(), s);
  std::vector<float> a(p.n), b(p.n), ba(p.image.size()), bb(p.image.size());
  d_a.copy_to_host(rp::span<float>(a.data(), p.n), s);
  d_b.copy_to_host(rp::span<float>(b.data(), p.n), s);
  d_bp.download(rp::span<float>(ba.data(), ba.size()), s);
  d_bp_rows.download(rp::span<float>(bb.data(), bb.size()), s);
  s.synchronize();
  EXPECT_EQ(a, b);
  EXPECT_LT(relative_error(bb, ba, 0), 1e-6);

  // The same through the plain call: LORs declared as a sinogram of 40
  // planes of 150 bins take the row mapping; with the lanes per LOR fixed
  // the values equal those of the undeclared (memory-order) call.
  const auto as_sinogram = lors.with_layout(rp::lor_layout::sinogram(10, 15));
  ASSERT_EQ(as_sinogram.layout.planes_in(p.n), 40u);
  gpu::tuning four;
  four.threads_per_lor = 4;
  d_b.fill(-1.f, s);
  gpu::forward(rp::op::non_tof{}, d_img, as_sinogram, d_b.span(), s, four);
  d_b.copy_to_host(rp::span<float>(b.data(), p.n), s);
  s.synchronize();
  EXPECT_EQ(b, a);
}
} // namespace

namespace {
/// max |a - b| / max |b|.
template <class T>
double max_difference(const std::vector<T> &a, const std::vector<T> &b) {
  double d = 0, m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::abs(double(a[i]) - double(b[i])));
    m = std::max(m, std::abs(double(b[i])));
  }
  return m > 0 ? d / m : d;
}

/// Projection by transaxial bins against the per-LOR kernels, on the LORs
/// of a cylindrical scanner as a [ring pair][crystal pair] sinogram: the
/// plain calls (which choose it), small tiles of rows and short plane
/// chunks (forced plans), and LOR sets that break the structure (reversed
/// LORs, random LORs declared as a sinogram), which are projected LOR by
/// LOR. Forward values and back-projected images, each against its
/// largest entry.
template <class T> void check_transaxial_bins(const rp::image_geometry &g) {
  std::vector<T> starts, ends;
  cylinder_lors<T>(g, starts, ends, 16); // 256 ring pairs: the least that go by bins
  const std::size_t n = starts.size() / 3, rows = 256, columns = n / rows;
  ASSERT_EQ(rows * columns, n);
  auto values = random_values<T>(n, 11);
  for (std::size_t i = 0; i < n; i += 7)
    values[i] = T(0); // skipped LORs
  const auto image = random_values<T>(std::size_t(g.num_voxels()), 12);
  gpu::stream s;
  auto d_values = gpu::make_device_buffer(rp::span<const T>(values.data(), n), s);
  gpu::device_image<T> d_image(g, s);
  d_image.upload(rp::span<const T>(image.data(), image.size()), s);
  // mode 0: per-LOR kernels (lanes along rows); 1: plain calls; 2: forced
  // plan with `budget` bytes and tiles of `tile` rows. Returns the forward
  // values followed by the back-projected image.
  const auto run = [&](const std::vector<T> &a, const std::vector<T> &b, int mode,
                       std::size_t budget, int tile) {
    auto d_a = gpu::make_device_buffer(rp::span<const T>(a.data(), a.size()), s);
    auto d_b = gpu::make_device_buffer(rp::span<const T>(b.data(), b.size()), s);
    const auto lors = rp::lor_view<const T>(d_a.data(), d_b.data(), n)
                          .with_layout(rp::lor_layout::sinogram(int(columns), 1));
    gpu::device_buffer<T> fwd(n, s);
    fwd.fill(T(-1), s);
    gpu::device_image<T> bp(g, s);
    bp.zero(s);
    gpu::kernel_choice c;
    c.rows = rows;
    c.transaxial_bins = mode != 0;
    if (mode == 0) {
      forward_variant<T>(c, d_image, lors, fwd.span(), s);
      back_variant<T>(c, bp, lors, d_values.cspan(), s);
    } else if (mode == 1) {
      for (auto d : {gpu::direction::forward, gpu::direction::back})
        EXPECT_TRUE(gpu::choose_kernel(gpu::operation_kind::non_tof, d, lors.layout, n,
                                       std::is_same_v<T, float>, 132)
                        .transaxial_bins);
      gpu::forward(rp::op::non_tof{}, d_image, lors, fwd.span(), s);
      gpu::back(rp::op::non_tof{}, bp, lors, d_values.cspan(), s);
    } else {
      EXPECT_TRUE(gpu::detail::launch_forward_columns(d_image.cview(), lors.normalized(),
                                                      fwd.span(), c, s, budget, tile));
      EXPECT_TRUE(gpu::detail::launch_back_columns(bp.view(), lors.normalized(),
                                                   d_values.cspan(), c, s, budget, tile));
    }
    return std::make_pair(download(fwd, s), download(bp, s));
  };
  const double tol = std::is_same_v<T, float> ? 2e-6 : 1e-13;
  const auto expect_equal = [&](const auto &got, const auto &want, const char *what) {
    EXPECT_LT(max_difference(got.first, want.first), tol) << what << ", forward";
    EXPECT_LT(max_difference(got.second, want.second), tol) << what << ", back";
  };
  const auto reference = run(starts, ends, 0, 0, 0);
  expect_equal(run(starts, ends, 1, 0, 0), reference, "plain calls");
  // 128 profile rows (the least), tiles of 77 rows: several tiles and, on
  // images longer than 128 planes, several plane chunks.
  const std::size_t small = gpu::detail::column_members_bytes<T>(77) +
                            128 * std::size_t(g.shape()[2]) * sizeof(T);
  expect_equal(run(starts, ends, 2, small, 77), reference, "small tiles and chunks");
  // Every third LOR reversed: those are not members of their bins.
  std::vector<T> a = starts, b = ends;
  for (std::size_t i = 0; i < n; i += 3)
    for (int k = 0; k < 3; ++k)
      std::swap(a[3 * i + k], b[3 * i + k]);
  expect_equal(run(a, b, 2, small, 77), run(a, b, 0, 0, 0), "reversed LORs");
  // Random LORs declared as a sinogram: hardly any structure.
  resproj_test_gpu::random_lors<T>(n, g, 5, a, b);
  expect_equal(run(a, b, 1, 0, 0), run(a, b, 0, 0, 0), "random LORs");
}

TEST_F(GpuTest, TransaxialBinsEqualThePerLorKernels) {
  check_transaxial_bins<float>(
      rp::image_geometry::centred({40, 36, 12}, {2.0, 2.0, 3.0}));
  check_transaxial_bins<double>(
      rp::image_geometry::centred({40, 36, 12}, {2.0, 2.0, 3.0}));
  // Longer than 128 planes along axis 0: plane chunks.
  check_transaxial_bins<float>(
      rp::image_geometry::centred({150, 20, 8}, {0.5, 2.0, 3.0}));
}

TEST_F(GpuTest, TransaxialBinsNeedProfilesThatFit) {
  // 4096 voxels along the axis: 128 profile rows need 2 MB of shared memory.
  const auto grid = rp::math::image_grid<float>::from(
      rp::image_geometry::centred({8, 8, 4096}, {1, 1, 1}));
  EXPECT_EQ(gpu::detail::make_column_plan(grid, 36, 100 * 1024).profile_rows, 0);
  const auto ok = gpu::detail::make_column_plan(
      rp::math::image_grid<float>::from(
          rp::image_geometry::centred({8, 8, 71}, {1, 1, 1})),
      1296, 100 * 1024);
  EXPECT_EQ(ok.profile_rows, 224); // dmi's 215 planes in one chunk
  EXPECT_EQ(ok.tile_rows, 1296);
  EXPECT_LE(ok.shared_bytes, 100u * 1024u);
}
} // namespace
