// One process per GPU, reducing back projections through one NCCL
// communicator made by the caller (the setup of a reconstruction launched
// with MPI, here with fork on one machine):
//
//  1. a probe child counts the GPUs (the parent never initialises CUDA, so
//     that its children can);
//  2. the parent forks one child per GPU (rank r uses device r); rank 0
//     makes the ncclUniqueId and sends it to the other ranks through pipes;
//  3. every rank joins the communicator (ncclCommInitRank), back-projects
//     its share of a sinogram's LORs (whole planes) into its own image and
//     sums the images with gpu::nccl_sum (ncclAllReduce, in place);
//  4. rank 0 also back-projects every LOR on its GPU alone and prints
//     whether the summed image matches (float rounding of the order only).
//
// NCCL_NVLS_ENABLE defaults to 0 (NVLink multicast off).
// Usage: multi_gpu_processes [max_ranks]. Exit code 0 when every rank
// matched (or there is nothing to do: no GPU, or resproj built without
// NCCL), 1 otherwise.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "resproj/gpu/gpu.cuh"
#include "resproj/gpu/multi_device_reduce.cuh"
#include "resproj/scanner/polygon_scanner.hpp"
#include "resproj/scanner/sinogram.hpp"
#include "resproj/scanner/sinogram_source.hpp"

#if defined(RESPROJ_HAS_NCCL) && RESPROJ_HAS_NCCL

namespace {

namespace rp = resproj;
namespace gpu = resproj::gpu;
namespace rs = resproj::scanner;

bool write_all(int fd, const void *data, std::size_t n) {
  const char *p = static_cast<const char *>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0)
      return false;
    p += w;
    n -= std::size_t(w);
  }
  return true;
}

bool read_all(int fd, void *data, std::size_t n) {
  char *p = static_cast<char *>(data);
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r <= 0)
      return false;
    p += r;
    n -= std::size_t(r);
  }
  return true;
}

/// The GPU count, asked in a child so that this process stays CUDA-free.
int probe_device_count() {
  int fds[2];
  if (::pipe(fds) != 0)
    return 0;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const int n = gpu::device_count();
    (void)write_all(fds[1], &n, sizeof n);
    ::_exit(0);
  }
  ::close(fds[1]);
  int n = 0;
  if (pid < 0 || !read_all(fds[0], &n, sizeof n))
    n = 0;
  ::close(fds[0]);
  if (pid > 0)
    ::waitpid(pid, nullptr, 0);
  return n;
}

template <class T> rp::span<const T> cs(const std::vector<T> &v) {
  return rp::span<const T>(v.data(), v.size());
}

/// Rank `rank` of `ranks`: returns 0 on success (rank 0: and a match).
int run_rank(int rank, int ranks, const ncclUniqueId &id) {
  gpu::device_guard guard(rank);
  gpu::stream s(rank);
  ncclComm_t comm = nullptr;
  RESPROJ_NCCL_TRY(ncclCommInitRank(&comm, ranks, id, rank));

  // The problem, the same in every rank: a small scanner's full sinogram.
  const auto scanner = rs::small_test_scanner();
  const auto layout = rs::span1_sinogram(scanner, 3);
  const auto planes = layout.plane_table();
  const auto detectors = scanner.detector_centres();
  const auto v = rs::subset_views(layout, 0, 1);
  const std::vector<std::int32_t> views(v.begin(), v.end());
  const auto geometry = rp::image_geometry::centred({30, 30, 12}, {3.0, 3.0, 2.0});
  auto d_det = gpu::make_device_buffer(cs(detectors), s);
  auto d_planes = gpu::make_device_buffer(cs(planes), s);
  auto d_views = gpu::make_device_buffer(cs(views), s);
  const auto all = rs::make_sinogram_source<float>(
      d_det.data(), detectors.size() / 3, layout.geometry(d_planes.data()),
      d_views.data(), int(views.size()), 0, layout.num_planes());
  // Values to back-project: a smooth function of the LOR index.
  std::vector<float> values(all.count);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = 1.0f + 0.5f * std::sin(0.001f * float(i));
  auto d_values = gpu::make_device_buffer(cs(values), s);

  // This rank's share: whole planes, as the multi-device projector splits.
  // The source declares its sinogram layout (its subview keeps it), so the
  // share runs with lanes along planes.
  const std::size_t per_plane = all.layout.lors_per_plane;
  const auto share = gpu::split_lors(all.count, ranks, {}, per_plane)[std::size_t(rank)];
  gpu::device_image<float> image(geometry, s);
  image.zero(s);
  gpu::back(rp::op::non_tof{}, image, all.subview(share.first, share.count),
            d_values.cspan().subspan(share.first, share.count), s);
  gpu::nccl_sum<float>(image.view(), comm, gpu::all_replicas, s);
  std::vector<float> summed(image.size());
  image.download(rp::span<float>(summed.data(), summed.size()), s);
  s.synchronize();
  std::printf("rank %d (device %d): LORs [%zu, %zu) back-projected and summed\n", rank,
              rank, share.first, share.first + share.count);

  int status = 0;
  if (rank == 0) { // the single-GPU result
    gpu::device_image<float> reference(geometry, s);
    reference.zero(s);
    gpu::back(rp::op::non_tof{}, reference, all, d_values.cspan(), s);
    std::vector<float> expected(reference.size());
    reference.download(rp::span<float>(expected.data(), expected.size()), s);
    s.synchronize();
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      diff += double(summed[i] - expected[i]) * double(summed[i] - expected[i]);
      norm += double(expected[i]) * double(expected[i]);
    }
    const double rel = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
    const bool ok = rel < 1e-5;
    std::printf("%d process(es): the NCCL sum %s the single-GPU back projection "
                "(relative difference %.2e)\n",
                ranks, ok ? "matches" : "DOES NOT match", rel);
    status = ok ? 0 : 1;
  }
  (void)ncclCommDestroy(comm);
  return status;
}

} // namespace

int main(int argc, char **argv) {
  ::setenv("NCCL_NVLS_ENABLE", "0", 0); // NVLink multicast off unless chosen
  const int found = probe_device_count();
  int ranks = found;
  if (argc > 1)
    ranks = std::min(ranks, std::max(1, std::atoi(argv[1])));
  if (ranks == 0) {
    std::printf("no CUDA device: nothing to do\n");
    return 0;
  }
  std::printf("%d GPU(s) visible, %d process(es)\n", found, ranks);
  std::fflush(stdout);

  // One pipe per rank > 0 for the NCCL id.
  std::vector<int> read_end(std::size_t(ranks), -1), write_end(std::size_t(ranks), -1);
  for (int r = 1; r < ranks; ++r) {
    int fds[2];
    if (::pipe(fds) != 0) {
      std::perror("pipe");
      return 1;
    }
    read_end[std::size_t(r)] = fds[0];
    write_end[std::size_t(r)] = fds[1];
  }
  std::vector<pid_t> children;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("fork");
      return 1;
    }
    if (pid > 0) {
      children.push_back(pid);
      continue;
    }
    // Child: rank r. Keep only the pipe ends it uses (so that a reader sees
    // end-of-file if rank 0 dies before sending the id).
    for (int k = 1; k < ranks; ++k) {
      if (r != 0)
        ::close(write_end[std::size_t(k)]);
      if (k != r)
        ::close(read_end[std::size_t(k)]);
    }
    int status = 1;
    try {
      ncclUniqueId id;
      if (r == 0) {
        RESPROJ_NCCL_TRY(ncclGetUniqueId(&id));
        for (int k = 1; k < ranks; ++k) {
          if (!write_all(write_end[std::size_t(k)], &id, sizeof id))
            throw std::runtime_error("cannot send the NCCL id");
          ::close(write_end[std::size_t(k)]);
        }
      } else {
        const bool got = read_all(read_end[std::size_t(r)], &id, sizeof id);
        ::close(read_end[std::size_t(r)]);
        if (!got)
          throw std::runtime_error("cannot receive the NCCL id");
      }
      status = run_rank(r, ranks, id);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "rank %d: %s\n", r, e.what());
    }
    std::fflush(stdout);
    ::_exit(status);
  }
  for (int r = 1; r < ranks; ++r) {
    ::close(read_end[std::size_t(r)]);
    ::close(write_end[std::size_t(r)]);
  }
  int failed = 0;
  for (const pid_t pid : children) {
    int status = 0;
    if (::waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      ++failed;
  }
  std::printf("%s\n", failed == 0 ? "every rank succeeded" : "some rank failed");
  return failed == 0 ? 0 : 1;
}

#else // built without NCCL

#include <cstdio>

int main() {
  std::printf("resproj was built without NCCL (RESPROJ_HAS_NCCL): nothing to do\n");
  return 0;
}

#endif
