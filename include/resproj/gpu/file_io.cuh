/// @file
/// @brief Files straight into device memory and back:
/// `device_file_io` (reusable; owns pinned bounce buffers and streams), the
/// one-shot `read_file` / `write_file`, and .npy / NIfTI / raw / list-mode
/// readers and writers that go to and from device buffers. Includes the
/// parts: settings and results (gpu/file_io_options.cuh), the transfer
/// object (gpu/file_io_device.cuh), its bounce, mapped and GPUDirect
/// Storage paths (gpu/file_io_bounce.cuh, gpu/file_io_mapped.cuh,
/// gpu/file_io_gds.cuh) and the format readers and writers
/// (gpu/file_io_formats.cuh).
///
/// Paths: GPUDirect Storage (cuFile, loaded at run time) when available and
/// allowed (`gds_mode`); else parallel `pread` / `pwrite` through pinned
/// bounce buffers (the default) or, for reads with `read_path::mapped`,
/// page-cache DMA from registered read-only file mappings. Reads below
/// `small_bytes` go through one pinned buffer on the calling thread.
/// `file_io_result` says which path ran. Every call is host-blocking for
/// the file side and stream-ordered for the device side (see
/// gpu/file_io_device.cuh).
#pragma once

#include "resproj/gpu/file_io_bounce.cuh"
#include "resproj/gpu/file_io_device.cuh"
#include "resproj/gpu/file_io_formats.cuh"
#include "resproj/gpu/file_io_gds.cuh"
#include "resproj/gpu/file_io_mapped.cuh"
#include "resproj/gpu/file_io_options.cuh"
