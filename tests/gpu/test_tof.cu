// GPU TOF projector: agreement with the CPU backend (sinogram and
// list-mode, forward and back, per-LOR sigma/offset arrays, the plain
// calls and forced kernel variants: thread mappings, rows, 64-bit indices,
// lock-step, sample order, vector loads and atomics, fast erfc, stencil
// layouts), adjointness, list-mode == sinogram under forced kernel
// variants, the list-mode reorder, the plain call running the table's
// choice, the streamer's TOF calls, argument checking and graph capture.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/gpu_test_data.hpp"
#include "gpu/gpu_test_util.hpp"
#include "resproj/gpu/gpu.cuh"
#include "resproj/gpu/listmode_order.cuh"
#include "resproj/resproj.hpp"

namespace rp = resproj;
namespace gpu = resproj::gpu;

namespace {

using resproj_test_gpu::dot;
using resproj_test_gpu::random_lors;
using resproj_test_gpu::random_values;
using resproj_test_gpu::relative_error;

std::vector<std::int16_t> random_bins(std::size_t n, int lo, int hi, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> uni(lo, hi);
  std::vector<std::int16_t> v(n);
  for (auto &x : v)
    x = std::int16_t(uni(rng));
  return v;
}

template <class T> struct tolerance;
template <> struct tolerance<float> { static constexpr double value = 2e-5; };
template <> struct tolerance<double> { static constexpr double value = 1e-11; };

template <class T>
gpu::device_buffer<T> upload(const std::vector<T> &v, gpu::stream_ref s) {
  return gpu::make_device_buffer(rp::span<const T>(v.data(), v.size()), s);
}

template <class T>
std::vector<T> download(const gpu::device_buffer<T> &b, gpu::stream_ref s) {
  std::vector<T> v(b.size());
  b.copy_to_host(rp::span<T>(v.data(), v.size()), s);
  s.synchronize();
  return v;
}

template <class T>
std::vector<T> download(const gpu::device_image<T> &img, gpu::stream_ref s) {
  std::vector<T> v(std::size_t(img.view().geometry.num_voxels()));
  img.download(rp::span<T>(v.data(), v.size()), s);
  s.synchronize();
  return v;
}

struct tof_case {
  std::array<std::int64_t, 3> shape;
  std::array<double, 3> voxel;
  double bin_width;
  int num_bins;
  double sigma;
  double offset;
  double num_sigmas;
  bool per_lor; ///< per-LOR sigma and offset arrays
};

const tof_case cases[] = {
    {{16, 24, 12}, {2.0, 1.0, 4.0}, 6.0, 9, 5.0, 0.0, 3.0, false},
    {{33, 17, 9}, {1.5, 2.5, 3.0}, 4.0, 15, 3.5, 1.5, 2.5, true},
    {{1, 40, 40}, {4.0, 1.0, 1.0}, 10.0, 5, 8.0, -2.0, 2.0, false},
    // Fine bins: windows of about 180 bins (no fixed window limit).
    {{20, 20, 20}, {2.0, 2.0, 2.0}, 0.5, 240, 15.0, 0.0, 3.0, true},
};

/// All host data of one case.
template <class T> struct host_case {
  rp::image_geometry g;
  rp::tof_params<T> tof; ///< with host per-LOR arrays if any
  std::vector<T> starts, ends, image, sino_values, lm_values, sigmas, offsets;
  std::vector<std::int16_t> bins;
  std::size_t n = 0, nb = 0;

  host_case(const tof_case &c, std::size_t count, std::uint32_t seed)
      : g(rp::image_geometry::centred(c.shape, c.voxel)) {
    random_lors<T>(count, g, seed, starts, ends);
    n = count;
    nb = std::size_t(c.num_bins);
    image = random_values<T>(std::size_t(g.num_voxels()), seed + 1);
    sino_values = random_values<T>(n * nb, seed + 2);
    lm_values = random_values<T>(n, seed + 3);
    bins = random_bins(n, -1, c.num_bins, seed + 4); // includes out-of-range bins
    tof.bin_width = T(c.bin_width);
    tof.num_bins = c.num_bins;
    tof.sigma = T(c.sigma);
    tof.center_offset = T(c.offset);
    tof.num_sigmas = T(c.num_sigmas);
    if (c.per_lor) {
      sigmas = random_values<T>(n, seed + 5, 0.5 * c.sigma, 1.5 * c.sigma);
      offsets = random_values<T>(n, seed + 6, -c.bin_width, c.bin_width);
      tof.sigmas = rp::span<const T>(sigmas.data(), n);
      tof.center_offsets = rp::span<const T>(offsets.data(), n);
    }
  }
  rp::lor_view<const T> lors() const { return {starts.data(), ends.data(), n}; }
  rp::span<const std::int16_t> bin_span() const { return {bins.data(), n}; }
};

/// Device copies of a host case.
template <class T> struct device_case {
  gpu::device_image<T> image;
  gpu::device_buffer<T> starts, ends, sino_values, lm_values, sigmas, offsets;
  gpu::device_buffer<std::int16_t> bins;
  rp::tof_params<T> tof;
  std::size_t n;

  device_case(const host_case<T> &h, gpu::stream_ref s)
      : image(h.g, s), starts(upload(h.starts, s)), ends(upload(h.ends, s)),
        sino_values(upload(h.sino_values, s)), lm_values(upload(h.lm_values, s)),
        bins(upload(h.bins, s)), tof(h.tof), n(h.n) {
    image.upload(rp::span<const T>(h.image.data(), h.image.size()), s);
    if (!h.sigmas.empty()) {
      sigmas = upload(h.sigmas, s);
      offsets = upload(h.offsets, s);
      tof.sigmas = sigmas.cspan();
      tof.center_offsets = offsets.cspan();
    }
  }
  rp::lor_view<const T> lors() const { return {starts.data(), ends.data(), n}; }
};

/// A kernel variant of the TOF calls (the levers of `gpu::kernel_choice`
/// a test forces; each applies where the kernel has it).
struct tof_variant {
  std::string name;
  bool vector_atomics = false;      ///< list-mode back: paired atomics
  bool sino_vector_atomics = false; ///< sinogram back: paired atomics
  bool sample_first = false;        ///< list-mode forward
  bool lockstep = false;            ///< list-mode forward and back
  bool fast_erfc = false;
  int slabs = 1;                        ///< list-mode, per-event kernels: passes
  gpu::stencil_workspace_ref stencil{}; ///< back projections
};

/// Lanes per LOR (0: the library's choice for the call), 64-bit voxel
/// offsets and lanes along rows.
struct tof_mapping {
  int tpl;
  bool wide;
  std::size_t rows;
};

/// The `kernel_choice` of variant `v` under mapping `m` for a call of
/// operation `k` in direction `d` over `count` unordered LORs.
template <class T>
gpu::kernel_choice make_choice(const tof_variant &v, const tof_mapping &m,
                               gpu::operation_kind k, gpu::direction d, std::size_t count,
                               int multiprocessors) {
  const bool lm = k == gpu::operation_kind::tof_listmode;
  const bool back = d == gpu::direction::back;
  gpu::kernel_choice c;
  c.threads_per_lor = m.tpl != 0
                          ? m.tpl
                          : gpu::choose_kernel(k, d, rp::lor_layout{}, count,
                                               std::is_same_v<T, float>, multiprocessors)
                                .threads_per_lor;
  c.wide_index = m.wide;
  c.rows = m.rows;
  c.fast_erfc = v.fast_erfc;
  c.sample_first = lm && !back && v.sample_first;
  c.lockstep = lm && v.lockstep;
  c.vector_atomics = back && (lm ? v.vector_atomics : v.sino_vector_atomics);
  c.slabs = lm ? v.slabs : 1;
  if (back)
    c.stencil = v.stencil;
  return c;
}

/// Forward projection with a forced kernel variant (no argument checks).
template <class T, class Op, class Lors>
void forward_variant(const gpu::kernel_choice &c, const Op &op,
                     gpu::device_image_view<const T> image, const Lors &lors,
                     rp::span<T> out, gpu::stream_ref s) {
  gpu::detail::run_forward(op, image, lors.normalized(), out, c, s);
}

/// Back projection with a forced kernel variant (no argument checks).
template <class T, class Op, class Lors>
void back_variant(const gpu::kernel_choice &c, const Op &op,
                  gpu::device_image_view<T> image, const Lors &lors,
                  rp::span<const T> values, gpu::stream_ref s) {
  gpu::detail::run_back(op, image, lors.normalized(), values, c, s);
}

template <class T> class GpuTof : public GpuTest {};
using value_types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(GpuTof, value_types);

TYPED_TEST(GpuTof, MatchesCpu) {
  using T = TypeParam;
  std::uint32_t seed = 21;
  for (const tof_case &c : cases) {
    const std::size_t count = c.num_bins > 100 ? 1200 : 6000; // divisible by 40
    const host_case<T> h(c, count, seed++);
    const std::size_t n = h.n, nb = h.nb;
    const rp::image_view<const T> himg(h.image.data(), h.g);
    std::vector<T> cpu_sino(n * nb), cpu_lm(n), cpu_bsino(h.image.size(), T(0)),
        cpu_blm(h.image.size(), T(0));
    const rp::op::tof_sinogram<T> h_sino(h.tof);
    const rp::op::tof_listmode<T> h_lm(h.tof, h.bin_span());
    rp::cpu::forward(h_sino, himg, h.lors(), rp::span<T>(cpu_sino.data(), n * nb));
    rp::cpu::back(h_sino, rp::image_view<T>(cpu_bsino.data(), h.g), h.lors(),
                  rp::span<const T>(h.sino_values.data(), n * nb));
    rp::cpu::forward(h_lm, himg, h.lors(), rp::span<T>(cpu_lm.data(), n));
    rp::cpu::back(h_lm, rp::image_view<T>(cpu_blm.data(), h.g), h.lors(),
                  rp::span<const T>(h.lm_values.data(), n));

    gpu::stream s;
    device_case<T> d(h, s);
    const rp::op::tof_sinogram<T> sino(d.tof);
    const rp::op::tof_listmode<T> lm(d.tof, d.bins.cspan());
    const int sms = gpu::detail::multiprocessor_count(d.image.device());
    gpu::device_buffer<T> d_sino(n * nb, s), d_lm(n, s);
    gpu::device_image<T> d_bp(h.g, s);
    const tof_mapping mappings[] = {{0, false, 0},  {1, false, 0}, {4, false, 0},
                                    {32, false, 0}, {2, true, 0},  {1, false, 40},
                                    {8, false, 40}};
    // Kernel variants: plain (every lever off, exact erfc), the levers the
    // library uses, every lever on, and the lock-step kernels.
    tof_variant plain;
    plain.name = "plain";
    tof_variant levers = plain;
    levers.name = "vector atomics, sample first, fast erfc";
    levers.vector_atomics = levers.sample_first = levers.fast_erfc = true;
    tof_variant all_on = levers;
    all_on.name = levers.name + ", sino vector atomics";
    all_on.sino_vector_atomics = true;
    tof_variant lockstep = plain;
    lockstep.name = "lock-step";
    lockstep.lockstep = true;
    tof_variant lockstep_levers = levers;
    lockstep_levers.name = "lock-step, " + levers.name;
    lockstep_levers.lockstep = true;
    tof_variant fast_plain = plain;
    fast_plain.name = "fast erfc";
    fast_plain.fast_erfc = true;
    // The stencil layout (the cases' random LORs include principal axis 2,
    // which falls back to the image): with the levers, lock-step, the plain
    // sample order and every lever on.
    gpu::stencil_workspace<T> ws(h.g, s), ws4(h.g, s, 4);
    tof_variant stencil = levers, stencil_lockstep = lockstep_levers,
                stencil_plain = plain, stencil_all = all_on, stencil_w4 = lockstep_levers;
    for (auto *v : {&stencil, &stencil_lockstep, &stencil_plain, &stencil_all}) {
      v->stencil = ws.ref();
      v->name += ", stencil width 2";
    }
    stencil_w4.stencil = ws4.ref();
    stencil_w4.name += ", stencil width 4";
    // Passes over slabs of the image (list-mode, per-event kernels): the
    // forward values sum the passes' parts, the back projection adds the
    // same amounts.
    tof_variant slabs3 = plain, slabs7 = levers, slabs_stencil = stencil;
    slabs3.slabs = 3;
    slabs7.slabs = 7;
    slabs_stencil.slabs = 5;
    for (auto *v : {&slabs3, &slabs7, &slabs_stencil})
      v->name += ", " + std::to_string(v->slabs) + " slab passes";
    for (const tof_mapping &m : mappings)
      for (const tof_variant &kv :
           {plain, levers, all_on, lockstep, lockstep_levers, fast_plain, stencil,
            stencil_lockstep, stencil_plain, stencil_all, stencil_w4, slabs3, slabs7,
            slabs_stencil}) {
        const auto choice = [&](gpu::operation_kind k, gpu::direction dir) {
          return make_choice<T>(kv, m, k, dir, n, sms);
        };
        const std::string what = "case bins " + std::to_string(c.num_bins) + ", tpl " +
                                 std::to_string(m.tpl) + (m.wide ? " wide" : "") +
                                 ", rows " + std::to_string(m.rows) + ", " + kv.name;
        d_sino.fill(T(-1), s);
        forward_variant<T>(
            choice(gpu::operation_kind::tof_sinogram, gpu::direction::forward), sino,
            d.image, d.lors(), d_sino.span(), s);
        EXPECT_LT(relative_error(download(d_sino, s), cpu_sino, n * nb / 10000),
                  tolerance<T>::value)
            << "forward tof_sinogram, " << what;

        d_lm.fill(T(-1), s);
        forward_variant<T>(
            choice(gpu::operation_kind::tof_listmode, gpu::direction::forward), lm,
            d.image, d.lors(), d_lm.span(), s);
        EXPECT_LT(relative_error(download(d_lm, s), cpu_lm, n / 10000),
                  tolerance<T>::value)
            << "forward tof_listmode, " << what;

        d_bp.zero(s);
        back_variant<T>(choice(gpu::operation_kind::tof_sinogram, gpu::direction::back),
                        sino, d_bp, d.lors(), d.sino_values.cspan(), s);
        EXPECT_LT(relative_error(download(d_bp, s), cpu_bsino, h.image.size()),
                  10 * tolerance<T>::value)
            << "back tof_sinogram, " << what;

        d_bp.zero(s);
        back_variant<T>(choice(gpu::operation_kind::tof_listmode, gpu::direction::back),
                        lm, d_bp, d.lors(), d.lm_values.cspan(), s);
        EXPECT_LT(relative_error(download(d_bp, s), cpu_blm, h.image.size()),
                  10 * tolerance<T>::value)
            << "back tof_listmode, " << what;
      }
    // Every call left the workspaces zero, as documented.
    for (const auto *w : {&ws, &ws4}) {
      const auto left = download(w->buffer(), s);
      EXPECT_EQ(std::count(left.begin(), left.end(), T(0)), std::ptrdiff_t(left.size()))
          << "the stencil workspace (width " << w->width() << ") is not zero";
    }

    // The plain calls (the library's choice) agree with the CPU, too.
    d_sino.fill(T(-1), s);
    gpu::forward(sino, d.image, d.lors(), d_sino.span(), s);
    EXPECT_LT(relative_error(download(d_sino, s), cpu_sino, n * nb / 10000),
              tolerance<T>::value)
        << "plain forward tof_sinogram, bins " << c.num_bins;
    d_lm.fill(T(-1), s);
    gpu::forward(lm, d.image, d.lors(), d_lm.span(), s);
    EXPECT_LT(relative_error(download(d_lm, s), cpu_lm, n / 10000), tolerance<T>::value)
        << "plain forward tof_listmode, bins " << c.num_bins;
    d_bp.zero(s);
    gpu::back(sino, d_bp, d.lors(), d.sino_values.cspan(), s);
    EXPECT_LT(relative_error(download(d_bp, s), cpu_bsino, h.image.size()),
              10 * tolerance<T>::value)
        << "plain back tof_sinogram, bins " << c.num_bins;
    d_bp.zero(s);
    gpu::back(lm, d_bp, d.lors(), d.lm_values.cspan(), s);
    EXPECT_LT(relative_error(download(d_bp, s), cpu_blm, h.image.size()),
              10 * tolerance<T>::value)
        << "plain back tof_listmode, bins " << c.num_bins;
  }
}

TYPED_TEST(GpuTof, Adjoint) {
  using T = TypeParam;
  std::uint32_t seed = 51;
  for (const tof_case &c : cases) {
    const host_case<T> h(c, c.num_bins > 100 ? 2000 : 20000, seed++);
    gpu::stream s;
    device_case<T> d(h, s);
    const std::size_t n = h.n, nb = h.nb;
    gpu::device_buffer<T> d_sino(n * nb, s), d_lm(n, s);
    gpu::device_image<T> d_bp(h.g, s);
    d_bp.zero(s);
    const rp::op::tof_sinogram<T> sino(d.tof);
    const rp::op::tof_listmode<T> lm(d.tof, d.bins.cspan());
    gpu::forward(sino, d.image, d.lors(), d_sino.span(), s);
    gpu::back(sino, d_bp, d.lors(), d.sino_values.cspan(), s);
    const double lhs = dot(download(d_sino, s), h.sino_values);
    const double rhs = dot(h.image, download(d_bp, s));
    EXPECT_LT(std::abs(lhs - rhs) / std::abs(lhs), 2 * tolerance<T>::value)
        << "sinogram pair, bins " << c.num_bins << ": " << lhs << " vs " << rhs;

    d_bp.zero(s);
    gpu::forward(lm, d.image, d.lors(), d_lm.span(), s);
    gpu::back(lm, d_bp, d.lors(), d.lm_values.cspan(), s);
    const double lhs2 = dot(download(d_lm, s), h.lm_values);
    const double rhs2 = dot(h.image, download(d_bp, s));
    EXPECT_LT(std::abs(lhs2 - rhs2) / std::abs(lhs2), 2 * tolerance<T>::value)
        << "list-mode pair, bins " << c.num_bins << ": " << lhs2 << " vs " << rhs2;
  }
}

TYPED_TEST(GpuTof, ListModeEqualsSinogramAtTheSameBin) {
  using T = TypeParam;
  std::uint32_t seed = 81;
  for (const tof_case &c : cases) {
    host_case<T> h(c, 4000, seed++);
    h.bins = random_bins(h.n, 0, c.num_bins - 1, seed + 100);
    gpu::stream s;
    device_case<T> d(h, s);
    const std::size_t n = h.n, nb = h.nb;
    const rp::op::tof_sinogram<T> sino_op(d.tof);
    const rp::op::tof_listmode<T> lm_op(d.tof, d.bins.cspan());
    gpu::device_buffer<T> d_sino(n * nb, s), d_lm(n, s);
    for (int tpl : {1, 4}) {
      // Fast erfc, and sample first in the list-mode forward.
      gpu::kernel_choice base;
      base.threads_per_lor = tpl;
      base.fast_erfc = true;
      base.sample_first = true;
      forward_variant<T>(base, sino_op, d.image, d.lors(), d_sino.span(), s);
      forward_variant<T>(base, lm_op, d.image, d.lors(), d_lm.span(), s);
      const auto sino = download(d_sino, s);
      const auto lm = download(d_lm, s);
      // Sample first adds the same terms in the same order as weight first
      // (with the same erfc): identical.
      gpu::kernel_choice weight_first = base;
      weight_first.sample_first = false;
      d_lm.fill(T(-1), s);
      forward_variant<T>(weight_first, lm_op, d.image, d.lors(), d_lm.span(), s);
      EXPECT_EQ(download(d_lm, s), lm) << "weight first, bins " << c.num_bins;
      if (tpl == 1) {
        // Warp lock-step: each lane adds its own planes in the same order as
        // one thread per event: identical.
        gpu::kernel_choice lockstep = base;
        lockstep.lockstep = true;
        d_lm.fill(T(-1), s);
        forward_variant<T>(lockstep, lm_op, d.image, d.lors(), d_lm.span(), s);
        EXPECT_EQ(download(d_lm, s), lm) << "lock-step, bins " << c.num_bins;
      }
      std::vector<T> at_bin(n);
      for (std::size_t i = 0; i < n; ++i)
        at_bin[i] = sino[i * nb + std::size_t(h.bins[i])];
      EXPECT_LT(relative_error(lm, at_bin, 0), tolerance<T>::value)
          << "bins " << c.num_bins << ", tpl " << tpl;
    }
  }
}

/// Parameter: 0 for the LOR-only key; 1 for the TOF-aware key (bins and
/// TOF parameters) in the layout for the image; 2 for the TOF-aware key
/// with 3 axial slab bits; 3 for that with the principal-axis bit too (and
/// one tilt bit fewer).
class GpuTofOrder : public GpuTest, public ::testing::WithParamInterface<int> {};

TEST_P(GpuTofOrder, SortedListModeMapsBackToTheUnsortedResult) {
  using T = float;
  const bool tof_key = GetParam() > 0;
  const int slab_bits = GetParam() >= 2 ? 3 : 0;
  const bool axis_bit = GetParam() == 3;
  host_case<T> h(cases[1], 30001, 7);
  gpu::listmode_tof_key slab_key = gpu::listmode_tof_key::for_image(h.g);
  slab_key.slab_bits = slab_bits;
  if (axis_bit) {
    slab_key.axis_bits = 1;
    --slab_key.tilt_bits;
  }
  gpu::stream s;
  device_case<T> d(h, s);
  const std::size_t n = h.n;
  gpu::tuning four;
  four.threads_per_lor = 4;

  // Unsorted reference.
  gpu::device_buffer<T> d_ref(n, s);
  gpu::device_image<T> d_bp_ref(h.g, s), d_bp(h.g, s);
  d_bp_ref.zero(s);
  const rp::op::tof_listmode<T> lm(d.tof, d.bins.cspan());
  gpu::forward(lm, d.image, d.lors(), d_ref.span(), s, four);
  gpu::back(lm, d_bp_ref, d.lors(), d.lm_values.cspan(), s, four);

  // Order, gather every per-event array.
  const std::size_t bytes = gpu::listmode_order_workspace_bytes(n);
  gpu::device_buffer<unsigned char> work(bytes, s);
  gpu::device_buffer<std::uint32_t> perm(n, s);
  const auto order = [&](std::size_t with_bytes) {
    if (slab_bits > 0)
      gpu::listmode_order<T>(h.g, d.lors(), d.bins.cspan(), d.tof, perm.span(),
                             work.data(), with_bytes, s, slab_key);
    else if (tof_key)
      gpu::listmode_order<T>(h.g, d.lors(), d.bins.cspan(), d.tof, perm.span(),
                             work.data(), with_bytes, s);
    else
      gpu::listmode_order<T>(h.g, d.lors(), perm.span(), work.data(), with_bytes, s);
  };
  order(bytes);
  gpu::device_buffer<T> ss(3 * n, s), se(3 * n, s), ssig(n, s), soff(n, s), sval(n, s),
      sout(n, s), out(n, s);
  gpu::device_buffer<std::int16_t> sbins(n, s);
  gpu::gather_lors<T>(d.lors(), perm.cspan(), ss.span(), se.span(), s);
  gpu::gather<std::int16_t>(d.bins.cspan(), perm.cspan(), sbins.span(), s);
  gpu::gather<T>(d.sigmas.cspan(), perm.cspan(), ssig.span(), s);
  gpu::gather<T>(d.offsets.cspan(), perm.cspan(), soff.span(), s);
  gpu::gather<T>(d.lm_values.cspan(), perm.cspan(), sval.span(), s);
  rp::tof_params<T> stof = d.tof;
  stof.sigmas = ssig.cspan();
  stof.center_offsets = soff.cspan();
  const rp::lor_view<const T> slors(ss.data(), se.data(), n);

  // The permutation is a permutation, and sorted keys put neighbours close.
  auto p = download(perm, s);
  std::vector<std::uint32_t> sorted_p = p;
  std::sort(sorted_p.begin(), sorted_p.end());
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(sorted_p[i], std::uint32_t(i));
  if (axis_bit) {
    // Below the slab bits the principal axis comes first: within a slab
    // the events along axis 2 form one run, so the order changes between
    // the two kinds at most twice per slab.
    std::size_t changes = 0;
    const auto along_z = [&](std::uint32_t e) {
      float d[3];
      for (std::size_t k = 0; k < 3; ++k)
        d[k] = float(h.ends[3 * e + k]) - float(h.starts[3 * e + k]);
      return rp::math::principal_axis(d) == 2;
    };
    std::size_t along = 0;
    for (std::size_t i = 0; i < n; ++i) {
      along += along_z(p[i]) ? 1 : 0;
      if (i > 0 && along_z(p[i]) != along_z(p[i - 1]))
        ++changes;
    }
    ASSERT_GT(along, n / 20) << "the case needs LORs along both kinds of axis";
    ASSERT_LT(along, n - n / 20);
    EXPECT_LE(changes, std::size_t(2) << slab_bits);
  }

  const rp::op::tof_listmode<T> slm(stof, sbins.cspan());
  gpu::forward(slm, d.image, slors, sout.span(), s, four);
  out.fill(T(-1), s);
  gpu::scatter_back<T>(sout.cspan(), perm.cspan(), out.span(), s);
  EXPECT_EQ(download(out, s), download(d_ref, s)); // same arithmetic per event

  d_bp.zero(s);
  gpu::back(slm, d_bp, slors, sval.cspan(), s, four);
  EXPECT_LT(relative_error(download(d_bp, s), download(d_bp_ref, s), 0), 1e-5);

  if (tof_key) {
    // A key layout of more than 32 bits is rejected, naming it.
    gpu::listmode_tof_key too_wide;
    too_wide.xy_bits = 12;
    try {
      gpu::listmode_order<T>(h.g, d.lors(), d.bins.cspan(), d.tof, perm.span(),
                             work.data(), bytes, s, too_wide);
      ADD_FAILURE() << "no exception";
    } catch (const rp::invalid_argument &e) {
      EXPECT_EQ(e.argument(), "key");
    }
    // Too few bins, too.
    try {
      gpu::listmode_order<T>(h.g, d.lors(), d.bins.cspan().subspan(0, n - 1), d.tof,
                             perm.span(), work.data(), bytes, s);
      ADD_FAILURE() << "no exception";
    } catch (const rp::invalid_argument &e) {
      EXPECT_EQ(e.argument(), "bins");
    }
  }
  // Too small a workspace is rejected, naming it.
  try {
    order(bytes / 2);
    ADD_FAILURE() << "no exception";
  } catch (const rp::invalid_argument &e) {
    EXPECT_EQ(e.argument(), "workspace_bytes");
  }
  // Graph-capturable: the order captured once and replayed gives the same.
  perm.fill(0u, s);
  s.synchronize();
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeGlobal), cudaSuccess);
  order(bytes);
  ASSERT_EQ(cudaStreamEndCapture(s.get(), &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s.get()), cudaSuccess);
  EXPECT_EQ(download(perm, s), p);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);

  if (!tof_key)
    return;
  const auto centre = [&](std::size_t i, int k) {
    const double a = h.starts[3 * i + std::size_t(k)], b = h.ends[3 * i + std::size_t(k)];
    double len2 = 0;
    for (int q = 0; q < 3; ++q) {
      const double e =
          double(h.ends[3 * i + std::size_t(q)]) - h.starts[3 * i + std::size_t(q)];
      len2 += e * e;
    }
    const int nb = h.tof.num_bins;
    const int j = std::min(std::max(int(h.bins[i]), 0), nb - 1);
    const double sc =
        (j - 0.5 * (nb - 1)) * double(h.tof.bin_width) + double(h.offsets[i]);
    return a + (0.5 + sc / std::sqrt(len2)) * (b - a);
  };
  if (slab_bits > 0) {
    // Slabs come first: the axial slab of the events' TOF-bin centres
    // never decreases along the order (events within 1e-3 of a slab's
    // edge, where float and double may disagree, are not judged).
    const auto box = gpu::listmode_order_box::from(h.g);
    const double slabs = double(1 << slab_bits);
    double highest = -1;
    int judged = 0;
    for (std::size_t k = 0; k < n; ++k) {
      // Centres beyond the box belong to the end slabs.
      const double u =
          (centre(p[k], 2) - box.z_min) / (double(box.z_max) - box.z_min) * slabs;
      if (u > 0 && u < slabs && std::abs(u - std::round(u)) < 1e-3)
        continue;
      const double slab = std::min(std::max(std::floor(u), 0.0), slabs - 1);
      ASSERT_GE(slab, highest) << "event " << k << " of the order";
      highest = slab;
      ++judged;
    }
    EXPECT_GT(judged, int(n) * 9 / 10);
    EXPECT_EQ(highest, slabs - 1);
    return;
  }
  // The TOF key puts events whose TOF-bin centres are close next to each
  // other: the mean distance between consecutive centres drops well below
  // that of the original (random) order (direction comes first in the key,
  // so with 3e4 isotropic events in 256 direction cells it drops to about
  // 0.56 of it here; far more on a real scanner's event counts).
  const auto mean_step = [&](const std::vector<std::uint32_t> &order_of) {
    double sum = 0;
    for (std::size_t k = 1; k < n; ++k) {
      double d2 = 0;
      for (int q = 0; q < 3; ++q) {
        const double e = centre(order_of[k], q) - centre(order_of[k - 1], q);
        d2 += e * e;
      }
      sum += std::sqrt(d2);
    }
    return sum / double(n - 1);
  };
  std::vector<std::uint32_t> identity(n);
  for (std::size_t i = 0; i < n; ++i)
    identity[i] = std::uint32_t(i);
  const double sorted_step = mean_step(p), random_step = mean_step(identity);
  EXPECT_LT(sorted_step, 0.75 * random_step)
      << "mean distance of consecutive TOF centres: sorted " << sorted_step
      << ", original " << random_step;
}

std::string order_key_name(const ::testing::TestParamInfo<int> &info) {
  const char *names[] = {"LorKey", "TofKey", "TofKeySlabs", "TofKeySlabsAxis"};
  return names[info.param];
}
INSTANTIATE_TEST_SUITE_P(Keys, GpuTofOrder, ::testing::Values(0, 1, 2, 3),
                         order_key_name);

// The plain call runs the kernel `gpu::choose_kernel` names for the call:
// list-mode events sorted by the TOF key and declared so, a full GPU of
// them (where the table takes lock-step back projections) and a small
// chunk, with the default overrides and exact erfc.
TYPED_TEST(GpuTof, PlainCallRunsTheChosenKernel) {
  using T = TypeParam;
  gpu::stream s;
  const int sms = gpu::detail::multiprocessor_count(gpu::current_device());
  const std::size_t n = std::size_t(sms) * 512 + 101;
  const host_case<T> h(cases[1], n, 17); // per-LOR sigma and offset
  device_case<T> d(h, s);

  // Sort by the TOF key; gather every per-event array.
  const std::size_t bytes = gpu::listmode_order_workspace_bytes(n);
  gpu::device_buffer<unsigned char> work(bytes, s);
  gpu::device_buffer<std::uint32_t> perm(n, s);
  gpu::listmode_order<T>(h.g, d.lors(), d.bins.cspan(), d.tof, perm.span(), work.data(),
                         bytes, s);
  gpu::device_buffer<T> ss(3 * n, s), se(3 * n, s), ssig(n, s), soff(n, s), sval(n, s);
  gpu::device_buffer<std::int16_t> sbins(n, s);
  gpu::gather_lors<T>(d.lors(), perm.cspan(), ss.span(), se.span(), s);
  gpu::gather<std::int16_t>(d.bins.cspan(), perm.cspan(), sbins.span(), s);
  gpu::gather<T>(d.sigmas.cspan(), perm.cspan(), ssig.span(), s);
  gpu::gather<T>(d.offsets.cspan(), perm.cspan(), soff.span(), s);
  gpu::gather<T>(d.lm_values.cspan(), perm.cspan(), sval.span(), s);
  rp::tof_params<T> stof = d.tof;
  stof.sigmas = ssig.cspan();
  stof.center_offsets = soff.cspan();
  const rp::op::tof_listmode<T> op(stof, sbins.cspan());
  const auto sorted = rp::lor_view<const T>(ss.data(), se.data(), n)
                          .with_layout(rp::lor_layout::sorted_events());

  gpu::device_buffer<T> a(n, s), b(n, s);
  gpu::device_image<T> bp_a(h.g, s), bp_b(h.g, s);
  gpu::tuning exact;
  exact.exact_erfc = true;
  const double back_tolerance = std::is_same_v<T, float> ? 1e-6 : 1e-12;
  for (const gpu::tuning &t : {gpu::tuning{}, exact})
    for (const std::size_t m : {n, std::size_t(1000)}) {
      const auto lors = sorted.subview(0, m); // keeps the layout
      ASSERT_EQ(lors.layout, rp::lor_layout::sorted_events());
      const std::string what =
          std::to_string(m) + " events" + (t.exact_erfc ? ", exact erfc" : "");
      const auto choice = [&](gpu::direction dir) {
        return gpu::choose_kernel(gpu::operation_kind::tof_listmode, dir, lors.layout, m,
                                  std::is_same_v<T, float>, sms, t);
      };
      a.fill(T(-1), s);
      b.fill(T(-1), s);
      gpu::forward(op, d.image, lors, a.span().subspan(0, m), s, t);
      forward_variant<T>(choice(gpu::direction::forward), op, d.image, lors,
                         b.span().subspan(0, m), s);
      const auto va = download(a, s);
      EXPECT_EQ(std::count(va.begin(), va.begin() + std::ptrdiff_t(m), T(-1)), 0)
          << "forward, " << what << ": events not written";
      EXPECT_EQ(va, download(b, s)) << "forward, " << what;

      bp_a.zero(s);
      bp_b.zero(s);
      gpu::back(op, bp_a, lors, sval.cspan().subspan(0, m), s, t);
      back_variant<T>(choice(gpu::direction::back), op, bp_b, lors,
                      sval.cspan().subspan(0, m), s);
      const auto ia = download(bp_a, s), ib = download(bp_b, s);
      EXPECT_GT(dot(ia, ia), 0.0) << "back, " << what;
      EXPECT_LT(relative_error(ia, ib, 0), back_tolerance) << "back, " << what;
    }
}

// On an image at least twice the L2, a plain call over a full GPU of
// events in acquisition order runs in slab passes (the choice takes the
// image's bytes and the device's L2) and gives the values of one pass:
// forward to rounding, back to the order of the atomic adds.
TEST_F(GpuTest, TofListModeOnAnImageLargerThanTheL2RunsInSlabPasses) {
  using T = float;
  gpu::stream s;
  const int device = gpu::current_device();
  const std::size_t l2 = gpu::detail::l2_cache_bytes(device);
  ASSERT_GT(l2, 0u);
  const auto slices = std::int64_t(5 * l2 / 2 / (128 * 128 * sizeof(T))) + 1;
  const tof_case c{{128, 128, slices}, {2.0, 2.0, 2.0}, 6.0, 15, 5.0, 0.0, 3.0, false};
  const int sms = gpu::detail::multiprocessor_count(device);
  const std::size_t n = std::size_t(sms) * 512 + 101;
  const host_case<T> h(c, n, 29);
  device_case<T> d(h, s);
  const rp::op::tof_listmode<T> op(d.tof, d.bins.cspan());
  const auto lors = d.lors();
  const std::size_t bytes = gpu::detail::image_bytes(h.g, sizeof(T));
  ASSERT_GE(bytes, 2 * l2);
  for (const auto dir : {gpu::direction::forward, gpu::direction::back})
    EXPECT_GT(
        (gpu::detail::choice_for<T, rp::op::tof_listmode<T>>(dir, lors, device, {}, bytes)
             .slabs),
        1);
  gpu::tuning one;
  one.slabs = 1;
  gpu::device_buffer<T> a(n, s), b(n, s);
  a.fill(T(-1), s);
  b.fill(T(-1), s);
  gpu::forward(op, d.image, lors, a.span(), s);
  gpu::forward(op, d.image, lors, b.span(), s, one);
  const auto va = download(a, s), vb = download(b, s);
  EXPECT_EQ(std::count(va.begin(), va.end(), T(-1)), 0) << "events not written";
  EXPECT_GT(dot(vb, vb), 0.0);
  EXPECT_LT(relative_error(va, vb, 0), 1e-6) << "forward";
  gpu::device_image<T> bp_a(h.g, s), bp_b(h.g, s);
  bp_a.zero(s);
  bp_b.zero(s);
  gpu::back(op, bp_a, lors, d.lm_values.cspan(), s);
  gpu::back(op, bp_b, lors, d.lm_values.cspan(), s, one);
  const auto ia = download(bp_a, s), ib = download(bp_b, s);
  EXPECT_GT(dot(ib, ib), 0.0);
  EXPECT_LT(relative_error(ia, ib, 0), 1e-6) << "back";
}

class GpuTofStreamer : public GpuTest,
                       public ::testing::WithParamInterface<std::size_t> {};

TEST_P(GpuTofStreamer, EqualsResidentCall) {
  using T = float;
  const std::size_t chunk = GetParam();
  const host_case<T> h(cases[1], 7001, 13); // per-LOR sigma and offset
  gpu::stream s;
  device_case<T> d(h, s);
  const std::size_t n = h.n, nb = h.nb;
  gpu::device_buffer<T> d_sino(n * nb, s), d_lm(n, s);
  gpu::device_image<T> d_bp(h.g, s);
  // Resident references: device per-LOR arrays and bins.
  const rp::op::tof_sinogram<T> d_sino_op(d.tof);
  const rp::op::tof_listmode<T> d_lm_op(d.tof, d.bins.cspan());
  gpu::forward(d_sino_op, d.image, d.lors(), d_sino.span(), s);
  gpu::forward(d_lm_op, d.image, d.lors(), d_lm.span(), s);
  const auto sino_ref = download(d_sino, s), lm_ref = download(d_lm, s);
  d_bp.zero(s);
  gpu::back(d_sino_op, d_bp, d.lors(), d.sino_values.cspan(), s);
  const auto bsino_ref = download(d_bp, s);
  d_bp.zero(s);
  gpu::back(d_lm_op, d_bp, d.lors(), d.lm_values.cspan(), s);
  const auto blm_ref = download(d_bp, s);

  // The streamer: host per-LOR arrays and bins.
  const rp::op::tof_sinogram<T> h_sino_op(h.tof);
  const rp::op::tof_listmode<T> h_lm_op(h.tof, h.bin_span());
  gpu::lor_streamer<T> streamer(chunk);
  std::vector<T> sino(n * nb, T(-1)), lm(n, T(-1));
  streamer.forward(h_sino_op, d.image.cview(), h.lors(), rp::span<T>(sino.data(), n * nb),
                   s);
  EXPECT_LT(relative_error(sino, sino_ref, 0), 1e-6);
  streamer.forward(h_lm_op, d.image.cview(), h.lors(), rp::span<T>(lm.data(), n), s);
  EXPECT_LT(relative_error(lm, lm_ref, 0), 1e-6);
  d_bp.zero(s);
  streamer.back(h_sino_op, d_bp.view(), h.lors(),
                rp::span<const T>(h.sino_values.data(), n * nb), s);
  EXPECT_LT(relative_error(download(d_bp, s), bsino_ref, 0), 1e-5);
  d_bp.zero(s);
  streamer.back(h_lm_op, d_bp.view(), h.lors(), rp::span<const T>(h.lm_values.data(), n),
                s);
  EXPECT_LT(relative_error(download(d_bp, s), blm_ref, 0), 1e-5);

  // Pinned output used in place; the non-TOF calls still work after TOF ones.
  gpu::pinned_buffer<T> pout(n * nb);
  streamer.forward(h_sino_op, d.image.cview(), h.lors(), pout.span(), s);
  EXPECT_LT(
      relative_error(std::vector<T>(pout.data(), pout.data() + n * nb), sino_ref, 0),
      1e-6);
  std::vector<T> plain(n), plain_ref(n);
  gpu::device_buffer<T> d_plain(n, s);
  gpu::forward(rp::op::non_tof{}, d.image, d.lors(), d_plain.span(), s);
  plain_ref = download(d_plain, s);
  streamer.forward(rp::op::non_tof{}, d.image.cview(), h.lors(),
                   rp::span<T>(plain.data(), n), s);
  EXPECT_LT(relative_error(plain, plain_ref, 0), 1e-6);

  // Device arrays where host ones are required are rejected.
  try {
    streamer.forward(rp::op::tof_listmode<T>(h.tof, d.bins.cspan()), d.image.cview(),
                     h.lors(), rp::span<T>(lm.data(), n), s);
    ADD_FAILURE() << "no exception";
  } catch (const rp::invalid_argument &e) {
    EXPECT_EQ(e.argument(), "bins");
  }
}

INSTANTIATE_TEST_SUITE_P(ChunkSizes, GpuTofStreamer,
                         ::testing::Values(std::size_t(1000), std::size_t(7001),
                                           std::size_t(100000)));

TEST_F(GpuTest, TofRejectsBadArgumentsBeforeWriting) {
  using T = float;
  host_case<T> h(cases[1], 1000, 3);
  gpu::stream s;
  device_case<T> d(h, s);
  const std::size_t n = h.n, nb = h.nb;
  gpu::device_buffer<T> d_out(n * nb, s);
  gpu::device_image<T> d_bp(h.g, s);
  d_out.fill(T(-7), s);
  d_bp.zero(s);

  auto expect_invalid = [](auto &&call, const std::string &argument) {
    try {
      call();
      ADD_FAILURE() << "no exception for " << argument;
    } catch (const rp::invalid_argument &e) {
      EXPECT_EQ(e.argument(), argument) << e.what();
    }
  };
  auto with = [&](auto change) {
    rp::tof_params<T> t = d.tof;
    change(t);
    return t;
  };
  const auto lors = d.lors();
  const auto out = d_out.span();
  const auto lm_out = d_out.span().subspan(0, n);
  const auto bins = d.bins.cspan();

  using sino_op = rp::op::tof_sinogram<T>;
  using lm_op = rp::op::tof_listmode<T>;
  const sino_op sino(d.tof);
  const lm_op lm(d.tof, bins);

  expect_invalid(
      [&] {
        gpu::forward(sino_op(with([](auto &t) { t.bin_width = 0; })), d.image, lors, out,
                     s);
      },
      "tof.bin_width");
  expect_invalid(
      [&] {
        gpu::forward(sino_op(with([](auto &t) { t.num_bins = 0; })), d.image, lors, out,
                     s);
      },
      "tof.num_bins");
  expect_invalid(
      [&] {
        gpu::forward(lm_op(with([](auto &t) { t.num_sigmas = -1; }), bins), d.image, lors,
                     lm_out, s);
      },
      "tof.num_sigmas");
  expect_invalid(
      [&] {
        gpu::back(lm_op(with([](auto &t) {
                          t.sigmas = {};
                          t.sigma = NAN;
                        }),
                        bins),
                  d_bp, lors, d.lm_values.cspan(), s);
      },
      "tof.sigma");
  expect_invalid(
      [&] {
        gpu::forward(sino_op(with([&](auto &t) {
                       t.sigmas = d.sigmas.cspan().subspan(0, n - 1);
                     })),
                     d.image, lors, out, s);
      },
      "tof.sigmas");
  // Host per-LOR arrays given to the device call.
  expect_invalid(
      [&] {
        gpu::forward(sino_op(with([&](auto &t) {
                       t.center_offsets = rp::span<const T>(h.offsets.data(), n);
                     })),
                     d.image, lors, out, s);
      },
      "tof.center_offsets");
  expect_invalid(
      [&] { gpu::forward(sino, d.image, lors, out.subspan(0, n * nb - 1), s); }, "out");
  expect_invalid(
      [&] {
        gpu::back(sino, d_bp, lors, d.sino_values.cspan().subspan(0, n * nb - 1), s);
      },
      "values");
  expect_invalid(
      [&] { gpu::forward(lm_op(d.tof, h.bin_span()), d.image, lors, lm_out, s); },
      "bins");
  expect_invalid(
      [&] {
        gpu::forward(lm_op(d.tof, bins.subspan(0, n - 1)), d.image, lors, lm_out, s);
      },
      "bins");
  expect_invalid(
      [&] {
        gpu::forward(lm, d.image,
                     rp::lor_view<const T>(h.starts.data(), h.ends.data(), n), lm_out, s);
      },
      "lors.starts");
  expect_invalid(
      [&] { gpu::forward(sino, d.image, lors, out, gpu::stream_ref(cudaStreamLegacy)); },
      "stream");
  // Bad overrides.
  gpu::tuning bad;
  bad.threads_per_lor = 3;
  expect_invalid([&] { gpu::forward(sino, d.image, lors, out, s, bad); },
                 "tuning.threads_per_lor");
  bad = {};
  bad.block_size = 0;
  expect_invalid([&] { gpu::forward(lm, d.image, lors, lm_out, s, bad); },
                 "tuning.block_size");
  expect_invalid([&] { gpu::back(lm, d_bp, lors, d.lm_values.cspan(), s, bad); },
                 "tuning.block_size");

  // Stencil workspaces of another geometry, element type or emptiness.
  {
    auto small_shape = h.g.shape();
    small_shape[0] -= 1;
    gpu::stencil_workspace<T> small(
        rp::image_geometry(small_shape, h.g.voxel_size(), h.g.origin()), s);
    gpu::stencil_workspace<double> wrong_type(h.g, s);
    gpu::tuning t;
    t.stencil = small.ref();
    expect_invalid([&] { gpu::back(lm, d_bp, lors, d.lm_values.cspan(), s, t); },
                   "tuning.stencil");
    expect_invalid([&] { gpu::back(sino, d_bp, lors, d.sino_values.cspan(), s, t); },
                   "tuning.stencil");
    expect_invalid([&] { gpu::stencil_workspace<T> bad_width(h.g, s, 3); }, "width");
    t.stencil = wrong_type.ref();
    expect_invalid([&] { gpu::back(lm, d_bp, lors, d.lm_values.cspan(), s, t); },
                   "tuning.stencil");
    s.synchronize();
  }

  const auto check = download(d_out, s);
  for (T v : check)
    ASSERT_EQ(v, T(-7)) << "a rejected call wrote its output";
  const auto img = download(d_bp, s);
  for (T v : img)
    ASSERT_EQ(v, T(0)) << "a rejected call wrote the image";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(GpuTest, TofGraphCaptureReplaysTheSameResult) {
  using T = float;
  host_case<T> h(cases[0], 5000, 9);
  gpu::stream s;
  device_case<T> d(h, s);
  const std::size_t n = h.n, nb = h.nb;
  gpu::device_buffer<T> d_sino(n * nb, s), d_lm(n, s);
  gpu::device_image<T> d_bs(h.g, s), d_bl(h.g, s);
  const std::size_t chunk = 777;
  auto enqueue = [&] {
    d_bs.zero(s);
    d_bl.zero(s);
    for (std::size_t first = 0; first < n; first += chunk) {
      const std::size_t m = std::min(chunk, n - first);
      const auto lors = d.lors().subview(first, m);
      const auto tof = d.tof.subview(first, m);
      const rp::op::tof_sinogram<T> sino(tof);
      const rp::op::tof_listmode<T> lm(tof, d.bins.cspan().subspan(first, m));
      gpu::forward(sino, d.image, lors, d_sino.span().subspan(first * nb, m * nb), s);
      gpu::back(sino, d_bs, lors, d.sino_values.cspan().subspan(first * nb, m * nb), s);
      gpu::forward(lm, d.image, lors, d_lm.span().subspan(first, m), s);
      gpu::back(lm, d_bl, lors, d.lm_values.cspan().subspan(first, m), s);
    }
  };
  enqueue();
  const auto sino0 = download(d_sino, s), lm0 = download(d_lm, s);
  const auto bs0 = download(d_bs, s), bl0 = download(d_bl, s);
  d_sino.fill(0.f, s);
  d_lm.fill(0.f, s);
  s.synchronize();
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeGlobal), cudaSuccess);
  enqueue();
  ASSERT_EQ(cudaStreamEndCapture(s.get(), &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 2; ++replay) {
    ASSERT_EQ(cudaGraphLaunch(exec, s.get()), cudaSuccess);
    EXPECT_LT(relative_error(download(d_sino, s), sino0, 0), 1e-6) << "replay " << replay;
    EXPECT_EQ(download(d_lm, s), lm0) << "replay " << replay;
    EXPECT_LT(relative_error(download(d_bs, s), bs0, 0), 1e-6) << "replay " << replay;
    EXPECT_LT(relative_error(download(d_bl, s), bl0, 0), 1e-6) << "replay " << replay;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

} // namespace
