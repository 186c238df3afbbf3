// The projection contract (contract_suite.hpp) for the CPU backend,
// float and double.
#include "contract/contract_suite.hpp"
#include "contract/executors_cpu.hpp"

namespace resproj_contract {

using cpu_executors = ::testing::Types<cpu_executor<float>, cpu_executor<double>>;
INSTANTIATE_TYPED_TEST_SUITE_P(Cpu, Contract, cpu_executors);

} // namespace resproj_contract
