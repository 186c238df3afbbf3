/// @file
/// @brief The CUDA backend (namespace resproj::gpu). Needs nvcc.
#pragma once

#include "resproj/gpu/device.cuh"
#include "resproj/gpu/device_buffer.cuh"
#include "resproj/gpu/device_image.cuh"
#include "resproj/gpu/error.cuh"
#include "resproj/gpu/event.cuh"
#include "resproj/gpu/file_io.cuh"
#include "resproj/gpu/launch.cuh"
#include "resproj/gpu/listmode_events.cuh"
#include "resproj/gpu/listmode_order.cuh"
#include "resproj/gpu/lor_streamer.cuh"
#include "resproj/gpu/memory_pool.cuh"
#include "resproj/gpu/multi_device.cuh"
#include "resproj/gpu/multi_device_projector.cuh"
#include "resproj/gpu/multi_device_reduce.cuh"
#include "resproj/gpu/multi_device_streamer.cuh"
#include "resproj/gpu/pinned_buffer.cuh"
#include "resproj/gpu/projector.cuh"
#include "resproj/gpu/stencil_workspace.cuh"
#include "resproj/gpu/stream.cuh"
#include "resproj/gpu/tof_projector.cuh"
