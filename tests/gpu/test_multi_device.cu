// Several GPUs: device sets, replicated images, projections split across
// devices and the sum of the replicas. With one device the results equal the
// single-device API; with more they equal one device within the rounding of
// the reduction order. Tests that need two devices skip on one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/expect.hpp"
#include "gpu/gpu_test_data.hpp"
#include "gpu/gpu_test_util.hpp"
#include "resproj/gpu/multi_device.cuh"
#include "resproj/gpu/multi_device_projector.cuh"
#include "resproj/gpu/multi_device_reduce.cuh"
#include "resproj/gpu/multi_device_streamer.cuh"
#include "resproj/resproj.hpp"

namespace {

namespace rp = resproj;
namespace gpu = resproj::gpu;
namespace rs = resproj::scanner;
using resproj_test::expect_invalid;
using resproj_test_gpu::relative_error;

// NVLink multicast (NVLS) off for the NCCL communicators unless the
// environment chose otherwise.
const bool nvls_off = [] { return ::setenv("NCCL_NVLS_ENABLE", "0", 0) == 0; }();

// ----------------------------------------------------------- host-only --

TEST(MultiDeviceCpu, SplitIsProportionalAndCoversEverything) {
  const auto r = gpu::split_lors(1000, 3, {1.0, 2.0, 1.0});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].first, 0u);
  EXPECT_EQ(r[0].count, 250u);
  EXPECT_EQ(r[1].first, 250u);
  EXPECT_EQ(r[1].count, 500u);
  EXPECT_EQ(r[2].first, 750u);
  EXPECT_EQ(r[2].count, 250u);
  const auto g = gpu::split_lors(12 * 7, 5, {}, 7); // whole rows of 7
  std::size_t next = 0;
  for (const auto &x : g) {
    EXPECT_EQ(x.first, next);
    EXPECT_EQ(x.count % 7, 0u);
    next += x.count;
  }
  EXPECT_EQ(next, 84u);
  const auto z = gpu::split_lors(10, 2, {0.0, 1.0});
  EXPECT_EQ(z[0].count, 0u);
  EXPECT_EQ(z[1].count, 10u);
  expect_invalid([] { gpu::split_lors(10, 2, {1.0}); }, "weights");
  expect_invalid([] { gpu::split_lors(10, 2, {0.0, 0.0}); }, "weights");
  expect_invalid([] { gpu::split_lors(10, 2, {1.0, -1.0}); }, "weights");
  expect_invalid([] { gpu::split_lors(10, 2, {}, 3); }, "granule");
}

TEST(MultiDeviceCpu, BadDeviceSetsAreRejected) {
  expect_invalid([] { gpu::device_set s(std::vector<int>{}); }, "devices");
  expect_invalid([] { gpu::device_set s({0, 0}); }, "devices");
  expect_invalid([] { gpu::device_set s({gpu::device_count()}); }, "devices");
  expect_invalid([] { gpu::device_set s({-1}); }, "devices");
}

// ------------------------------------------------------------- fixture --

// Test problem resident on one device: a small scanner's sinogram
// description, list-mode events (detector pairs + TOF bins), an image and
// values to back-project.
struct device_problem {
  gpu::device_buffer<float> detectors;
  gpu::device_buffer<std::int32_t> planes, views, pairs;
  gpu::device_buffer<std::int16_t> bins;
  rs::sinogram_source<float> sino;
  rp::detector_pairs<float> events;
};

struct host_problem {
  rs::polygon_scanner scanner = rs::small_test_scanner();
  rs::sinogram_layout layout = rs::span1_sinogram(scanner, 3);
  std::vector<std::int32_t> planes = layout.plane_table();
  std::vector<float> detectors = scanner.detector_centres();
  std::vector<std::int32_t> views;
  std::vector<std::int32_t> pairs;
  std::vector<std::int16_t> bins;
  rp::image_geometry geometry =
      rp::image_geometry::centred({30, 30, 12}, {3.0, 3.0, 2.0});
  std::vector<float> image;
  rp::tof_params<float> tof;
  std::size_t num_events = 20000;

  host_problem() {
    const std::vector<int> v = rs::subset_views(layout, 0, 2);
    views.assign(v.begin(), v.end());
    image.resize(std::size_t(geometry.num_voxels()));
    for (std::size_t i = 0; i < image.size(); ++i)
      image[i] = 0.25f + float((i * 53) % 97) / 97.f;
    tof.bin_width = 20.f;
    tof.num_bins = 9;
    tof.sigma = 25.f;
    std::mt19937 rng(7);
    const int nd = int(detectors.size() / 3);
    std::uniform_int_distribution<int> det(0, nd - 1);
    std::uniform_int_distribution<int> bin(-1, tof.num_bins);
    for (std::size_t i = 0; i < num_events; ++i) {
      const int a = det(rng);
      int b = det(rng);
      if (b == a)
        b = (a + nd / 2) % nd;
      pairs.push_back(a);
      pairs.push_back(b);
      bins.push_back(std::int16_t(bin(rng)));
    }
  }

  template <class T> static rp::span<const T> cs(const std::vector<T> &v) {
    return rp::span<const T>(v.data(), v.size());
  }

  device_problem upload(int device, gpu::stream_ref s) const {
    const gpu::device_guard guard(device);
    device_problem p{gpu::make_device_buffer(cs(detectors), s),
                     gpu::make_device_buffer(cs(planes), s),
                     gpu::make_device_buffer(cs(views), s),
                     gpu::make_device_buffer(cs(pairs), s),
                     gpu::make_device_buffer(cs(bins), s),
                     {},
                     {}};
    p.sino = rs::make_sinogram_source<float>(
        p.detectors.data(), detectors.size() / 3, layout.geometry(p.planes.data()),
        p.views.data(), int(views.size()), 0, layout.num_planes());
    p.events = rp::detector_pairs<float>(p.detectors.data(), detectors.size() / 3,
                                         p.pairs.data(), num_events);
    return p;
  }
};

// Single-device reference results on device `device` (the sinogram
// sources declare their layout: lanes along planes).
struct reference {
  std::vector<float> fwd, fwd_tof, fwd_lm, back, back_tof, back_lm;
};

reference single_device(const host_problem &h, int device) {
  const gpu::device_guard guard(device);
  gpu::stream s(device);
  const device_problem p = h.upload(device, s);
  gpu::device_image<float> img(h.geometry, s);
  img.upload(host_problem::cs(h.image), s);
  const std::size_t n = p.sino.count, nb = std::size_t(h.tof.num_bins);
  const rp::op::tof_listmode<float> lm(h.tof, p.bins.cspan());
  gpu::device_buffer<float> a(n, s), b(n * nb, s), c(h.num_events, s);
  gpu::forward(rp::op::non_tof{}, img, p.sino, a.span(), s);
  gpu::forward(rp::op::tof_sinogram{h.tof}, img, p.sino, b.span(), s);
  gpu::forward(lm, img, p.events, c.span(), s);
  reference r;
  r.fwd = download(a, s);
  r.fwd_tof = download(b, s);
  r.fwd_lm = download(c, s);
  img.zero(s);
  gpu::back(rp::op::non_tof{}, img, p.sino, a.cspan(), s);
  r.back = download(img, s);
  img.zero(s);
  gpu::back(rp::op::tof_sinogram{h.tof}, img, p.sino, b.cspan(), s);
  r.back_tof = download(img, s);
  img.zero(s);
  gpu::back(lm, img, p.events, c.cspan(), s);
  r.back_lm = download(img, s);
  return r;
}

// Runs every multi-device projection on `devices` and compares with `ref`.
// `exact`: forward results must be identical (one device); back projections
// use atomics, so they are compared within float rounding.
void check_against(const host_problem &h, const gpu::device_set &devices,
                   const reference &ref, bool exact, gpu::reduce_method method,
                   bool per_device_outputs) {
  const int n = devices.size();
  if (!per_device_outputs && !devices.all_peers())
    return; // one shared output needs peer access from every device
  gpu::stream_set streams(devices);
  std::vector<device_problem> problems;
  for (int i = 0; i < n; ++i)
    problems.push_back(h.upload(devices.device(i), streams[i]));
  gpu::replicated_image<float> img(devices, h.geometry, streams);
  img.upload(host_problem::cs(h.image), streams);
  gpu::replica_reducer<float> reducer(devices, h.geometry, streams, method);

  std::vector<rs::sinogram_source<float>> sino;
  std::vector<rp::detector_pairs<float>> events;
  for (auto &p : problems)
    sino.push_back(p.sino);
  const std::size_t lors = problems[0].sino.count, nb = std::size_t(h.tof.num_bins);
  // List-mode: events as shares, device i holds events [i * m, (i + 1) * m),
  // and its bins (one operation per device).
  const std::size_t share = (h.num_events + std::size_t(n) - 1) / std::size_t(n);
  std::vector<rp::op::tof_listmode<float>> share_ops;
  for (int i = 0; i < n; ++i) {
    const std::size_t first = std::min(h.num_events, share * std::size_t(i));
    const std::size_t count = std::min(h.num_events - first, share);
    events.push_back(problems[std::size_t(i)].events.subview(first, count));
    share_ops.emplace_back(h.tof,
                           problems[std::size_t(i)].bins.cspan().subspan(first, count));
  }
  gpu::multi_options shares;
  shares.input = gpu::lor_input::shares;

  // Outputs: one array on the first device, or one per device.
  std::vector<gpu::device_buffer<float>> a, b, c;
  const int outputs = per_device_outputs ? n : 1;
  for (int i = 0; i < outputs; ++i) {
    const gpu::device_guard guard(devices.device(i));
    a.emplace_back(lors, streams[i]);
    b.emplace_back(lors * nb, streams[i]);
    c.emplace_back(per_device_outputs ? events[std::size_t(i)].count : h.num_events,
                   streams[i]);
  }
  auto spans = [](std::vector<gpu::device_buffer<float>> &v) {
    std::vector<rp::span<float>> r;
    for (auto &x : v)
      r.push_back(x.span());
    return r;
  };
  auto cspans = [](std::vector<gpu::device_buffer<float>> &v) {
    std::vector<rp::span<const float>> r;
    for (auto &x : v)
      r.push_back(x.cspan());
    return r;
  };
  gpu::forward(rp::op::non_tof{}, img, sino, spans(a), streams);
  gpu::forward(rp::op::tof_sinogram{h.tof}, img, sino, spans(b), streams);
  gpu::forward(share_ops, img, events, spans(c), streams, shares);

  // Gather the forward results: replicated input, so per-device outputs are
  // indexed like the whole call and device i filled its range.
  auto gather = [&](std::vector<gpu::device_buffer<float>> &v, std::size_t per_lor,
                    bool share_mode) {
    if (v.size() == 1)
      return download(v[0], streams[0]);
    std::vector<float> all;
    const auto ranges =
        gpu::split_lors(lors, n, {}, lors / std::size_t(h.layout.num_planes()));
    for (int i = 0; i < n; ++i) {
      const auto part = download(v[std::size_t(i)], streams[i]);
      if (share_mode) {
        all.insert(all.end(), part.begin(), part.end());
      } else {
        const auto r = ranges[std::size_t(i)];
        all.insert(all.end(), part.begin() + std::ptrdiff_t(r.first * per_lor),
                   part.begin() + std::ptrdiff_t((r.first + r.count) * per_lor));
      }
    }
    return all;
  };
  const auto fa = gather(a, 1, false), fb = gather(b, nb, false), fc = gather(c, 1, true);
  if (exact) {
    EXPECT_EQ(fa, ref.fwd);
    EXPECT_EQ(fb, ref.fwd_tof);
    EXPECT_EQ(fc, ref.fwd_lm);
  } else {
    // Parts may use other lanes per LOR than the whole call: rounding only.
    EXPECT_LT(relative_error(fa, ref.fwd, 0), 1e-5);
    EXPECT_LT(relative_error(fb, ref.fwd_tof, 0), 1e-5);
    EXPECT_LT(relative_error(fc, ref.fwd_lm, 0), 1e-5);
  }

  // Back projections of the reference forward results (uploaded to device
  // 0, read by the others through peer access when they have it; one copy
  // per device otherwise).
  auto values_for = [&](const std::vector<float> &v) {
    std::vector<gpu::device_buffer<float>> d;
    const int copies = devices.all_peers() ? 1 : n;
    for (int i = 0; i < copies; ++i) {
      const gpu::device_guard guard(devices.device(i));
      d.push_back(gpu::make_device_buffer(host_problem::cs(v), streams[i]));
    }
    return d;
  };
  auto va = values_for(ref.fwd), vb = values_for(ref.fwd_tof),
       vc = values_for(ref.fwd_lm);
  for (int root : {gpu::all_replicas, n - 1}) {
    const int check = root < 0 ? 0 : root;
    auto run = [&](auto &&project, const std::vector<float> &expected, const char *what) {
      img.zero(streams);
      project();
      reducer.sum(img, streams, root);
      const auto got = download(img.replica(check), streams[check]);
      EXPECT_LT(relative_error(got, expected, 0), 2e-6) << what << " root " << root;
      if (root < 0) // every replica holds the same sum
        for (int i = 0; i < n; ++i)
          EXPECT_LT(relative_error(download(img.replica(i), streams[i]), expected, 0),
                    2e-6)
              << what << " replica " << i;
    };
    run([&] { gpu::back(rp::op::non_tof{}, img, sino, cspans(va), streams); }, ref.back,
        "back");
    run([&] { gpu::back(rp::op::tof_sinogram{h.tof}, img, sino, cspans(vb), streams); },
        ref.back_tof, "back_tof_sino");
    // List-mode values in the call's order (the shares' concatenation).
    std::vector<rp::span<const float>> lm_values;
    if (va.size() == 1) {
      lm_values = cspans(vc);
    } else {
      for (int i = 0; i < n; ++i)
        lm_values.push_back(vc[std::size_t(i)].cspan().subspan(
            events[0].count * std::size_t(i), events[std::size_t(i)].count));
    }
    run([&] { gpu::back(share_ops, img, events, lm_values, streams, shares); },
        ref.back_lm, "back_tof_lm");
  }
  streams.synchronize();
}

class MultiDevice : public GpuTest {};

TEST_F(MultiDevice, OneDeviceEqualsTheSingleDeviceApi) {
  const host_problem h;
  const reference ref = single_device(h, 0);
  const gpu::device_set one({0});
  check_against(h, one, ref, true, gpu::reduce_method::automatic, false);
  check_against(h, one, ref, true, gpu::reduce_method::automatic, true);
}

TEST_F(MultiDevice, EveryDeviceMatchesOneDevice) {
  if (gpu::device_count() < 2)
    GTEST_SKIP() << "needs 2 CUDA devices, found " << gpu::device_count();
  const host_problem h;
  const reference ref = single_device(h, 0);
  const gpu::device_set all = gpu::device_set::all();
  std::vector<gpu::reduce_method> methods = {gpu::reduce_method::automatic,
                                             gpu::reduce_method::host_staged};
  if (all.all_peers())
    methods.push_back(gpu::reduce_method::peer);
#if defined(RESPROJ_HAS_NCCL) && RESPROJ_HAS_NCCL
  methods.push_back(gpu::reduce_method::nccl);
#endif
  for (const auto m : methods) {
    SCOPED_TRACE("reduce method " + std::to_string(int(m)));
    check_against(h, all, ref, false, m, false);
    check_against(h, all, ref, false, m, true);
  }
#if defined(RESPROJ_HAS_NCCL) && RESPROJ_HAS_NCCL
  { // Communicators made by the caller, used through the same sum.
    std::vector<ncclComm_t> comms(std::size_t(all.size()), nullptr);
    ASSERT_EQ(ncclCommInitAll(comms.data(), all.size(), all.devices().data()),
              ncclSuccess);
    {
      gpu::stream_set streams(all);
      gpu::replicated_image<float> img(all, h.geometry, streams);
      img.fill(1.0f, streams);
      gpu::replica_reducer<float> reducer(all, h.geometry, streams, comms);
      EXPECT_EQ(reducer.method(), gpu::reduce_method::nccl);
      reducer.sum(img, streams);
      for (int i = 0; i < all.size(); ++i)
        for (const float v : download(img.replica(i), streams[i]))
          ASSERT_EQ(v, float(all.size()));
      auto swapped = comms;
      std::swap(swapped[0], swapped[1]);
      expect_invalid(
          [&] { gpu::replica_reducer<float> r(all, h.geometry, streams, swapped); },
          "comms");
      streams.synchronize();
    }
    for (ncclComm_t c : comms)
      ncclCommDestroy(c);
  }
#endif
  // Every pair of devices in reverse order, and uneven weights.
  const gpu::device_set pair({all.device(1), all.device(0)});
  check_against(h, pair, ref, false, gpu::reduce_method::automatic, true);
}

TEST_F(MultiDevice, ReplicasAreUploadedAndBroadcastToEveryDevice) {
  const host_problem h;
  const gpu::device_set devices = gpu::device_set::all();
  const int n = devices.size();
  gpu::stream_set streams(devices);
  gpu::replicated_image<float> img(devices, h.geometry, streams);
  img.upload(host_problem::cs(h.image), streams);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(img.replica(i).device(), devices.device(i));
    EXPECT_EQ(download(img.replica(i), streams[i]), h.image) << "replica " << i;
  }
  img.replica(n - 1).fill(2.0f, streams[n - 1]);
  img.broadcast(n - 1, streams);
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(download(img.replica(i), streams[i]),
              std::vector<float>(h.image.size(), 2.0f))
        << "replica " << i;
  expect_invalid([&] { img.broadcast(n, streams); }, "from");
  expect_invalid([&] { img.upload(rp::span<const float>(h.image.data(), 3), streams); },
                 "host");
  streams.synchronize();
}

TEST_F(MultiDevice, UnevenWeightsSplitWholeRows) {
  const host_problem h;
  const reference ref = single_device(h, 0);
  const gpu::device_set devices = gpu::device_set::all();
  const int n = devices.size();
  gpu::stream_set streams(devices);
  std::vector<device_problem> problems;
  std::vector<rs::sinogram_source<float>> sino;
  for (int i = 0; i < n; ++i) {
    problems.push_back(h.upload(devices.device(i), streams[i]));
    sino.push_back(problems.back().sino);
  }
  // The sources declare their sinogram layout (planes of views x radial
  // bins): the devices' parts are whole planes.
  const std::size_t lors = sino[0].count;
  const std::size_t per_plane = lors / std::size_t(h.layout.num_planes());
  ASSERT_EQ(sino[0].layout,
            rp::lor_layout::sinogram(h.views.size(), per_plane / h.views.size()));
  gpu::replicated_image<float> img(devices, h.geometry, streams);
  img.upload(host_problem::cs(h.image), streams);
  gpu::device_buffer<float> out(lors, streams[0]);
  gpu::multi_options m;
  m.weights.assign(std::size_t(n), 1.0);
  m.weights[0] = 3.0;
  gpu::forward(rp::op::non_tof{}, img, sino, {out.span()}, streams, m);
  streams.synchronize();
  EXPECT_LT(relative_error(download(out, streams[0]), ref.fwd, 0), 1e-5);

  // One output per device (indexed like the whole call): device i writes
  // exactly its range, whole planes.
  const float sentinel = -1.f;
  std::vector<gpu::device_buffer<float>> own;
  std::vector<rp::span<float>> own_spans;
  for (int i = 0; i < n; ++i) {
    const gpu::device_guard guard(devices.device(i));
    own.emplace_back(lors, streams[i]);
    own.back().fill(sentinel, streams[i]);
    own_spans.push_back(own.back().span());
  }
  gpu::forward(rp::op::non_tof{}, img, sino, own_spans, streams, m);
  const auto ranges = gpu::split_lors(lors, n, m.weights, per_plane);
  std::vector<float> got_in_range, ref_in_range;
  for (int i = 0; i < n; ++i) {
    const gpu::lor_range r = ranges[std::size_t(i)];
    EXPECT_EQ(r.first % per_plane, 0u) << "device " << i;
    EXPECT_EQ(r.count % per_plane, 0u) << "device " << i;
    const auto got = download(own[std::size_t(i)], streams[i]);
    std::size_t outside = 0;
    for (std::size_t j = 0; j < lors; ++j) {
      if (j >= r.first && j < r.first + r.count) {
        got_in_range.push_back(got[j]);
        ref_in_range.push_back(ref.fwd[j]);
      } else if (got[j] != sentinel) {
        ++outside;
      }
    }
    EXPECT_EQ(outside, 0u) << "device " << i << " wrote outside its range";
  }
  EXPECT_EQ(got_in_range.size(), lors);
  EXPECT_LT(relative_error(got_in_range, ref_in_range, 0), 1e-5);
  streams.synchronize();
}

// One list-mode operation per device, its bins on that device: with events
// as shares (bins of the share) and replicated (every device all bins); and
// one operation for the whole call over shares (bins read through peer
// access). Every form equals the single-device API.
TEST_F(MultiDevice, PerDeviceOperationsEqualTheSingleDeviceApi) {
  const host_problem h;
  const reference ref = single_device(h, 0);
  const gpu::device_set devices = gpu::device_set::all();
  const int n = devices.size();
  const std::size_t nn = std::size_t(n), events_count = h.num_events;
  gpu::stream_set streams(devices);
  std::vector<device_problem> problems;
  for (int i = 0; i < n; ++i)
    problems.push_back(h.upload(devices.device(i), streams[i]));
  gpu::replicated_image<float> img(devices, h.geometry, streams);
  img.upload(host_problem::cs(h.image), streams);
  gpu::replica_reducer<float> reducer(devices, h.geometry, streams);
  auto spans = [](std::vector<gpu::device_buffer<float>> &v) {
    std::vector<rp::span<float>> r;
    for (auto &x : v)
      r.push_back(x.span());
    return r;
  };
  auto cspans = [](std::vector<gpu::device_buffer<float>> &v) {
    std::vector<rp::span<const float>> r;
    for (auto &x : v)
      r.push_back(x.cspan());
    return r;
  };
  // One device: identical forward values; more: the parts may use other
  // lanes per LOR than the whole call (rounding only).
  auto expect_forward = [&](const std::vector<float> &got, const char *what) {
    ASSERT_EQ(got.size(), ref.fwd_lm.size()) << what;
    if (n == 1)
      EXPECT_EQ(got, ref.fwd_lm) << what;
    else
      EXPECT_LT(relative_error(got, ref.fwd_lm, 0), 1e-5) << what;
  };
  // Back projections overwrite the replicas: the image is uploaded again
  // afterwards for the next forward projection.
  auto expect_back = [&](auto &&project, const char *what) {
    img.zero(streams);
    project();
    reducer.sum(img, streams, 0);
    EXPECT_LT(relative_error(download(img.replica(0), streams[0]), ref.back_lm, 0), 2e-6)
        << what;
    img.upload(host_problem::cs(h.image), streams);
  };

  // Shares: device i holds events [first_i, first_i + count_i), their bins,
  // outputs and values.
  gpu::multi_options shares;
  shares.input = gpu::lor_input::shares;
  const std::size_t share = (events_count + nn - 1) / nn;
  std::vector<rp::detector_pairs<float>> events;
  std::vector<rp::op::tof_listmode<float>> ops;
  std::vector<gpu::device_buffer<float>> out, values;
  for (int i = 0; i < n; ++i) {
    const std::size_t first = std::min(events_count, share * std::size_t(i));
    const std::size_t count = std::min(events_count - first, share);
    const device_problem &p = problems[std::size_t(i)];
    events.push_back(p.events.subview(first, count));
    ops.emplace_back(h.tof, p.bins.cspan().subspan(first, count));
    const gpu::device_guard guard(devices.device(i));
    out.emplace_back(count, streams[i]);
    values.push_back(gpu::make_device_buffer(
        rp::span<const float>(ref.fwd_lm.data() + first, count), streams[i]));
  }
  gpu::forward(ops, img, events, spans(out), streams, shares);
  std::vector<float> gathered;
  for (int i = 0; i < n; ++i) {
    const auto part = download(out[std::size_t(i)], streams[i]);
    gathered.insert(gathered.end(), part.begin(), part.end());
  }
  expect_forward(gathered, "shares");
  expect_back([&] { gpu::back(ops, img, events, cspans(values), streams, shares); },
              "shares");

  // Replicated: every device all events and all bins; per-device outputs
  // indexed like the whole call (device i fills its range).
  std::vector<rp::detector_pairs<float>> all_events;
  std::vector<rp::op::tof_listmode<float>> all_ops;
  std::vector<gpu::device_buffer<float>> all_out, all_values;
  for (int i = 0; i < n; ++i) {
    const device_problem &p = problems[std::size_t(i)];
    all_events.push_back(p.events);
    all_ops.emplace_back(h.tof, p.bins.cspan());
    const gpu::device_guard guard(devices.device(i));
    all_out.emplace_back(events_count, streams[i]);
    all_values.push_back(
        gpu::make_device_buffer(host_problem::cs(ref.fwd_lm), streams[i]));
  }
  gpu::forward(all_ops, img, all_events, spans(all_out), streams);
  gathered.clear();
  const auto ranges = gpu::split_lors(events_count, n, {});
  for (int i = 0; i < n; ++i) {
    const auto part = download(all_out[std::size_t(i)], streams[i]);
    const gpu::lor_range r = ranges[std::size_t(i)];
    gathered.insert(gathered.end(), part.begin() + std::ptrdiff_t(r.first),
                    part.begin() + std::ptrdiff_t(r.first + r.count));
  }
  expect_forward(gathered, "replicated");
  expect_back([&] { gpu::back(all_ops, img, all_events, cspans(all_values), streams); },
              "replicated");

  // One operation for the whole call over shares: bins on device 0.
  if (n == 1 || devices.all_peers()) {
    const rp::op::tof_listmode<float> whole(h.tof, problems[0].bins.cspan());
    const gpu::device_guard guard(devices.device(0));
    gpu::device_buffer<float> whole_out(events_count, streams[0]);
    gpu::forward(whole, img, events, {whole_out.span()}, streams, shares);
    expect_forward(download(whole_out, streams[0]), "one operation");
    const auto v = gpu::make_device_buffer(host_problem::cs(ref.fwd_lm), streams[0]);
    expect_back([&] { gpu::back(whole, img, events, {v.cspan()}, streams, shares); },
                "one operation");
  }

  // Per-device operations are checked like per-device arrays.
  const std::vector<rp::op::tof_listmode<float>> too_few_ops(ops.begin(), ops.end() - 1);
  expect_invalid(
      [&] { gpu::forward(too_few_ops, img, events, spans(out), streams, shares); },
      "ops");
  auto short_bins = ops;
  auto &last = short_bins.back();
  last.bins = last.bins.subspan(0, last.bins.size() - 1);
  expect_invalid(
      [&] { gpu::forward(short_bins, img, events, spans(out), streams, shares); },
      "ops[" + std::to_string(n - 1) + "].bins");
  if (n > 1 && !devices.peer_access(1, 0)) {
    auto other_device = ops;
    other_device[1].bins = problems[0].bins.cspan().subspan(0, events[1].count);
    expect_invalid(
        [&] { gpu::forward(other_device, img, events, spans(out), streams, shares); },
        "ops[1].bins");
  }
  streams.synchronize();
}

TEST_F(MultiDevice, BadArgumentsAreRejectedBeforeAnyWork) {
  const host_problem h;
  const gpu::device_set devices = gpu::device_set::all();
  const int n = devices.size();
  gpu::stream_set streams(devices);
  std::vector<device_problem> problems;
  std::vector<rs::sinogram_source<float>> sino;
  for (int i = 0; i < n; ++i) {
    problems.push_back(h.upload(devices.device(i), streams[i]));
    sino.push_back(problems.back().sino);
  }
  gpu::replicated_image<float> img(devices, h.geometry, streams);
  img.zero(streams);
  gpu::device_buffer<float> out(sino[0].count, streams[0]);
  std::vector<float> host_out(sino[0].count);
  const std::vector<rp::span<float>> outs = {out.span()};
  std::vector<gpu::stream_ref> too_few(streams.refs().begin(), streams.refs().end() - 1);
  const rp::op::non_tof non_tof;
  expect_invalid([&] { gpu::forward(non_tof, img, sino, outs, too_few); }, "streams");
  expect_invalid(
      [&] {
        gpu::forward(non_tof, img, sino,
                     {rp::span<float>(host_out.data(), host_out.size())}, streams);
      },
      "out");
  expect_invalid(
      [&] { gpu::forward(non_tof, img, sino, {out.span().subspan(0, 5)}, streams); },
      "out");
  auto short_list = sino;
  short_list.pop_back();
  expect_invalid([&] { gpu::forward(non_tof, img, short_list, outs, streams); }, "lors");
  gpu::multi_options w;
  w.weights = {1.0,  2.0,  3.0,  4.0,  5.0,  6.0,  7.0,  8.0, 9.0,
               10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0};
  expect_invalid([&] { gpu::forward(non_tof, img, sino, outs, streams, w); }, "weights");
  // One operation per device: as many as devices.
  const std::vector<rp::op::non_tof> too_many_ops(std::size_t(n) + 1);
  expect_invalid([&] { gpu::forward(too_many_ops, img, sino, outs, streams); }, "ops");
  // Tuning is checked for every part.
  gpu::multi_options bad_tuning;
  bad_tuning.tuning.block_size = 100;
  expect_invalid([&] { gpu::forward(non_tof, img, sino, outs, streams, bad_tuning); },
                 "tuning.block_size");
  gpu::replica_reducer<float> reducer(devices, h.geometry, streams);
  expect_invalid([&] { reducer.sum(img, streams, n); }, "root");
#if !(defined(RESPROJ_HAS_NCCL) && RESPROJ_HAS_NCCL)
  expect_invalid(
      [&] {
        gpu::replica_reducer<float> r(devices, h.geometry, streams,
                                      gpu::reduce_method::nccl);
      },
      "method");
#endif
  if (n < 2)
    return; // the wrong-device checks need a second device
  // Device 1's source pointing at device 0's tables.
  auto wrong = sino;
  wrong[1] = sino[0];
  expect_invalid([&] { gpu::forward(non_tof, img, wrong, outs, streams); },
                 "lors[1].detectors");
  // Streams in the wrong order.
  std::vector<gpu::stream_ref> swapped = streams.refs();
  std::swap(swapped[0], swapped[1]);
  expect_invalid([&] { gpu::forward(non_tof, img, sino, outs, swapped); }, "streams[0]");
  // Per-device outputs: entry 1 on device 0 is usable only through peer
  // access.
  if (!devices.peer_access(1, 0)) {
    gpu::device_buffer<float> out1(sino[0].count, streams[0]);
    expect_invalid(
        [&] {
          gpu::forward(non_tof, img, sino, {out.span(), out1.span()}, streams);
        },
        "out[1]");
  }
  streams.synchronize();
}

// ------------------------------------------------- host-resident LORs --

// The host problem's events as host end points, packed records and values,
// with per-LOR TOF widths for the calls that take them.
struct host_lors {
  std::vector<float> starts, ends, values, sino_values, sigmas;
  std::vector<rs::listmode_event> records;
  rp::tof_params<float> tof_lor; // tof with per-LOR sigmas

  explicit host_lors(const host_problem &h) {
    const std::size_t n = h.num_events, nb = std::size_t(h.tof.num_bins);
    for (std::size_t i = 0; i < n; ++i) {
      const auto a = std::size_t(h.pairs[2 * i]), b = std::size_t(h.pairs[2 * i + 1]);
      for (std::size_t k = 0; k < 3; ++k) {
        starts.push_back(h.detectors[3 * a + k]);
        ends.push_back(h.detectors[3 * b + k]);
      }
      records.push_back(
          rs::listmode_event::make(std::uint32_t(a), std::uint32_t(b), h.bins[i]));
      values.push_back(0.5f + float(i % 13) / 13.f);
      sigmas.push_back(18.f + float(i % 7));
    }
    for (std::size_t i = 0; i < n * nb; ++i)
      sino_values.push_back(0.25f + float(i % 11) / 11.f);
    tof_lor = h.tof;
    tof_lor.sigmas = host_problem::cs(sigmas);
  }
  rp::lor_view<const float> lors() const {
    return rp::lor_view<const float>(starts.data(), ends.data(), records.size());
  }
};

// Results of the streamed calls: forward (pairs), TOF sinogram forward (end
// points, per-LOR sigmas), TOF list-mode forward (records; end points and
// bins), back (end points), TOF sinogram back (pairs), TOF list-mode back
// (records; pairs and bins with per-LOR sigmas).
struct streamed {
  std::vector<float> fwd, fwd_tof, fwd_lm, fwd_lm_ep, back, back_tof, back_lm,
      back_lm_pairs;
};

template <class T> rp::span<T> ms(std::vector<T> &v) {
  return rp::span<T>(v.data(), v.size());
}

// Reference: one lor_streamer on device 0.
streamed one_streamer(const host_problem &h, const host_lors &l) {
  const gpu::device_guard guard(0);
  gpu::stream s(0);
  const device_problem p = h.upload(0, s);
  gpu::device_image<float> img(h.geometry, s);
  img.upload(host_problem::cs(h.image), s);
  gpu::lor_streamer<float> st(4096);
  const std::size_t n = h.num_events, nb = std::size_t(h.tof.num_bins);
  const rp::detector_pairs<float> pairs(p.detectors.data(), p.detectors.size() / 3,
                                        h.pairs.data(), n);
  const rs::listmode_records<float> rec(p.detectors.data(), p.detectors.size() / 3,
                                        l.records.data(), n);
  const auto host_bins = host_problem::cs(h.bins);
  streamed r;
  r.fwd.resize(n);
  r.fwd_tof.resize(n * nb);
  r.fwd_lm.resize(n);
  r.fwd_lm_ep.resize(n);
  st.forward(rp::op::non_tof{}, img, pairs, ms(r.fwd), s);
  st.forward(rp::op::tof_sinogram{l.tof_lor}, img, l.lors(), ms(r.fwd_tof), s);
  st.forward(rp::op::tof_listmode{h.tof}, img, rec, ms(r.fwd_lm), s);
  st.forward(rp::op::tof_listmode{h.tof, host_bins}, img, l.lors(), ms(r.fwd_lm_ep), s);
  auto run = [&](auto &&project) {
    img.zero(s);
    project();
    return download(img, s);
  };
  const auto v = host_problem::cs(l.values);
  r.back = run([&] { st.back(rp::op::non_tof{}, img, l.lors(), v, s); });
  r.back_tof = run([&] {
    st.back(rp::op::tof_sinogram{h.tof}, img, pairs, host_problem::cs(l.sino_values), s);
  });
  r.back_lm = run([&] { st.back(rp::op::tof_listmode{h.tof}, img, rec, v, s); });
  r.back_lm_pairs = run([&] {
    st.back(rp::op::tof_listmode{l.tof_lor, host_bins}, img, pairs, v, s);
  });
  return r;
}

// The same calls through a multi_device_streamer on `devices`, back
// projections summed with a replica_reducer (into replica 0).
streamed multi_streamer(const host_problem &h, const host_lors &l,
                        const gpu::device_set &devices,
                        const std::vector<double> &weights, std::size_t max_chunk) {
  const int nd = devices.size();
  gpu::stream_set streams(devices);
  std::vector<device_problem> problems;
  std::vector<rp::detector_pairs<float>> pairs;
  std::vector<rs::listmode_records<float>> rec;
  for (int i = 0; i < nd; ++i) {
    problems.push_back(h.upload(devices.device(i), streams[i]));
    const auto &p = problems.back();
    pairs.emplace_back(p.detectors.data(), p.detectors.size() / 3, h.pairs.data(),
                       h.num_events);
    rec.emplace_back(p.detectors.data(), p.detectors.size() / 3, l.records.data(),
                     h.num_events);
  }
  gpu::replicated_image<float> img(devices, h.geometry, streams);
  img.upload(host_problem::cs(h.image), streams);
  gpu::replica_reducer<float> reducer(devices, h.geometry, streams);
  gpu::multi_device_streamer<float> st(devices, max_chunk);
  EXPECT_EQ(st.size(), nd);
  EXPECT_EQ(st.streamer(nd - 1).device(), devices.device(nd - 1));
  const std::size_t n = h.num_events, nb = std::size_t(h.tof.num_bins);
  const auto host_bins = host_problem::cs(h.bins);
  streamed r;
  r.fwd.resize(n);
  r.fwd_tof.resize(n * nb);
  r.fwd_lm_ep.resize(n);
  gpu::pinned_buffer<float> pinned_out(n); // the direct (pinned) output path
  st.forward(rp::op::non_tof{}, img, pairs, ms(r.fwd), streams, weights);
  st.forward(rp::op::tof_sinogram{l.tof_lor}, img, l.lors(), ms(r.fwd_tof), streams,
             weights);
  st.forward(rp::op::tof_listmode{h.tof}, img, rec, pinned_out.span(), streams, weights);
  r.fwd_lm.assign(pinned_out.begin(), pinned_out.end());
  st.forward(rp::op::tof_listmode{h.tof, host_bins}, img, l.lors(), ms(r.fwd_lm_ep),
             streams, weights);
  auto run = [&](auto &&project) {
    img.zero(streams);
    project();
    reducer.sum(img, streams, 0);
    return download(img.replica(0), streams[0]);
  };
  const auto v = host_problem::cs(l.values);
  r.back = run([&] { st.back(rp::op::non_tof{}, img, l.lors(), v, streams, weights); });
  r.back_tof = run([&] {
    st.back(rp::op::tof_sinogram{h.tof}, img, pairs, host_problem::cs(l.sino_values),
            streams, weights);
  });
  r.back_lm =
      run([&] { st.back(rp::op::tof_listmode{h.tof}, img, rec, v, streams, weights); });
  r.back_lm_pairs = run([&] {
    st.back(rp::op::tof_listmode{l.tof_lor, host_bins}, img, pairs, v, streams, weights);
  });
  streams.synchronize();
  return r;
}

void expect_streamed_equal(const streamed &got, const streamed &ref, bool exact) {
  const std::vector<std::pair<const std::vector<float> *, const std::vector<float> *>>
      fwd = {{&got.fwd, &ref.fwd},
             {&got.fwd_tof, &ref.fwd_tof},
             {&got.fwd_lm, &ref.fwd_lm},
             {&got.fwd_lm_ep, &ref.fwd_lm_ep}};
  for (std::size_t k = 0; k < fwd.size(); ++k) {
    ASSERT_EQ(fwd[k].first->size(), fwd[k].second->size()) << "forward " << k;
    if (exact)
      EXPECT_EQ(*fwd[k].first, *fwd[k].second) << "forward " << k;
    else
      EXPECT_LT(relative_error(*fwd[k].first, *fwd[k].second, 0), 1e-5)
          << "forward " << k;
  }
  // The reference is not trivially zero (the comparison can fail).
  double sum = 0;
  for (const float x : ref.fwd_lm)
    sum += double(x);
  EXPECT_GT(sum, 0.0);
  EXPECT_LT(relative_error(got.back, ref.back, 0), 2e-6);
  EXPECT_LT(relative_error(got.back_tof, ref.back_tof, 0), 2e-6);
  EXPECT_LT(relative_error(got.back_lm, ref.back_lm, 0), 2e-6);
  EXPECT_LT(relative_error(got.back_lm_pairs, ref.back_lm_pairs, 0), 2e-6);
}

TEST_F(MultiDevice, StreamedHostLorsOnOneDeviceEqualTheLorStreamer) {
  const host_problem h;
  const host_lors l(h);
  const streamed ref = one_streamer(h, l);
  expect_streamed_equal(multi_streamer(h, l, gpu::device_set({0}), {}, 4096), ref, true);
}

TEST_F(MultiDevice, StreamedHostLorsOnEveryDeviceEqualOneStreamer) {
  const host_problem h;
  const host_lors l(h);
  const streamed ref = one_streamer(h, l);
  const gpu::device_set all = gpu::device_set::all();
  // Several chunks per device (other chunks than the reference's, so the
  // library may pick other threads per LOR: rounding only); equal and uneven
  // shares (the last device takes the most).
  std::vector<double> uneven;
  for (int i = 0; i < all.size(); ++i)
    uneven.push_back(double(i + 1));
  {
    SCOPED_TRACE("equal shares");
    expect_streamed_equal(multi_streamer(h, l, all, {}, 3000), ref, false);
  }
  {
    SCOPED_TRACE("uneven shares");
    expect_streamed_equal(multi_streamer(h, l, all, uneven, 1777), ref, false);
  }
  if (all.size() < 2)
    return;
  // Every device but the first gets nothing: device 0 alone, through the
  // set, in the reference's chunks (identical forward values).
  std::vector<double> first_only(std::size_t(all.size()), 0.0);
  first_only[0] = 1.0;
  SCOPED_TRACE("first device only");
  expect_streamed_equal(multi_streamer(h, l, all, first_only, 4096), ref, true);
}

TEST_F(MultiDevice, StreamerRejectsBadArgumentsBeforeAnyWork) {
  const host_problem h;
  const host_lors l(h);
  const gpu::device_set devices = gpu::device_set::all();
  const int n = devices.size();
  gpu::stream_set streams(devices);
  std::vector<device_problem> problems;
  std::vector<rp::detector_pairs<float>> pairs;
  std::vector<rs::listmode_records<float>> rec;
  for (int i = 0; i < n; ++i) {
    problems.push_back(h.upload(devices.device(i), streams[i]));
    pairs.emplace_back(problems.back().detectors.data(),
                       problems.back().detectors.size() / 3, h.pairs.data(),
                       h.num_events);
    rec.emplace_back(problems.back().detectors.data(),
                     problems.back().detectors.size() / 3, l.records.data(),
                     h.num_events);
  }
  gpu::replicated_image<float> img(devices, h.geometry, streams);
  img.upload(host_problem::cs(h.image), streams);
  gpu::multi_device_streamer<float> st(devices, 4096);
  const float sentinel = -7.f;
  std::vector<float> out(h.num_events, sentinel);
  const auto o = ms(out);
  const rp::op::non_tof non_tof;
  const rp::op::tof_listmode<float> lm(h.tof); // bins from the records
  expect_invalid([&] { gpu::multi_device_streamer<float> x(devices, 0); }, "max_chunk");
  expect_invalid([&] { st.forward(non_tof, img, l.lors(), o.subspan(0, 10), streams); },
                 "host_out");
  std::vector<gpu::stream_ref> too_few(streams.refs().begin(), streams.refs().end() - 1);
  expect_invalid([&] { st.forward(non_tof, img, l.lors(), o, too_few); }, "streams");
  expect_invalid(
      [&] {
        st.forward(non_tof, img, l.lors(), o, streams, {1.0, -1.0, 1.0});
      },
      "weights");
  // Device memory where host memory is required.
  {
    const gpu::device_guard guard(devices.device(0));
    gpu::device_buffer<float> device_out(h.num_events, streams[0]);
    expect_invalid([&] { st.forward(non_tof, img, pairs, device_out.span(), streams); },
                   "host_out");
  }
  auto device_pairs = pairs;
  for (int i = 0; i < n; ++i)
    device_pairs[std::size_t(i)].pairs = problems[0].pairs.data();
  expect_invalid([&] { st.forward(non_tof, img, device_pairs, o, streams); },
                 "host_lors[0].pairs");
  // Host memory where a resident detector table is required.
  auto host_tables = pairs;
  host_tables.back().detectors = h.detectors.data();
  expect_invalid([&] { st.forward(non_tof, img, host_tables, o, streams); },
                 "host_lors[" + std::to_string(n - 1) + "].detectors");
  auto no_tables = rec;
  no_tables.pop_back();
  expect_invalid([&] { st.forward(lm, img, no_tables, o, streams); }, "host_lors");
  auto bad_tof = h.tof;
  bad_tof.num_bins = 0;
  expect_invalid(
      [&] { st.forward(rp::op::tof_listmode<float>(bad_tof), img, rec, o, streams); },
      "tof.num_bins");
  expect_invalid(
      [&] {
        st.forward(rp::op::tof_listmode{h.tof, host_problem::cs(h.bins).subspan(0, 5)},
                   img, l.lors(), o, streams);
      },
      "bins");
  // An image replicated on another set of devices.
  const gpu::device_set first({devices.device(0)});
  gpu::stream_set first_streams(first);
  gpu::replicated_image<float> other(first, h.geometry, first_streams);
  if (n > 1)
    expect_invalid([&] { st.forward(non_tof, other, l.lors(), o, streams); }, "image");
  if (n > 1) {
    // Device 1's table on device 0.
    auto wrong = rec;
    wrong[1] = rec[0];
    expect_invalid([&] { st.forward(lm, img, wrong, o, streams); },
                   "host_lors[1].detectors");
  }
  // Nothing was written by the rejected calls.
  for (const float x : out)
    ASSERT_EQ(x, sentinel);
  first_streams.synchronize();
  streams.synchronize();
}

} // namespace
