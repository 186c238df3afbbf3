#include "cpu_run.hpp"

void resproj_py::run_cpu_float(const call &c) { run_cpu<float>(c); }
