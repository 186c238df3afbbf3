// The projection contract (contract_suite.hpp) for the compiled GPU target
// from a plain C++ translation unit, float and double: compiled::forward /
// compiled::back with device LORs and compiled::lor_streamer with host
// LORs. Without a CUDA device every test skips, saying why.
#include "contract/contract_suite.hpp"
#include "contract/executors_compiled.hpp"

namespace resproj_contract {

using compiled_executors =
    ::testing::Types<compiled_executor<float>, compiled_executor<double>>;
using compiled_streamed_executors = ::testing::Types<compiled_streamed_executor<float>,
                                                     compiled_streamed_executor<double>>;
INSTANTIATE_TYPED_TEST_SUITE_P(CompiledResident, Contract, compiled_executors);
INSTANTIATE_TYPED_TEST_SUITE_P(CompiledStreamed, Contract, compiled_streamed_executors);

} // namespace resproj_contract
