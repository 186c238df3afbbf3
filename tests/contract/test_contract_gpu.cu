// The projection contract (contract_suite.hpp) for the header-only GPU
// executors, float and double: resident images with device LORs, the
// host-LOR streamer and several devices (every visible one; one is
// enough). One translation unit, so each kernel is instantiated once for
// all three. Without a CUDA device every test skips, saying why.
#include "contract/contract_suite.hpp"
#include "contract/executors_gpu.cuh"

namespace resproj_contract {

using resident_executors =
    ::testing::Types<resident_executor<float>, resident_executor<double>>;
using streamed_executors =
    ::testing::Types<streamed_executor<float>, streamed_executor<double>>;
using multi_device_executors =
    ::testing::Types<multi_device_executor<float>, multi_device_executor<double>>;
INSTANTIATE_TYPED_TEST_SUITE_P(GpuResident, Contract, resident_executors);
INSTANTIATE_TYPED_TEST_SUITE_P(GpuStreamed, Contract, streamed_executors);
INSTANTIATE_TYPED_TEST_SUITE_P(MultiDevice, Contract, multi_device_executors);

} // namespace resproj_contract
