#include "cpu_run.hpp"

void resproj_py::run_cpu_double(const call &c) { run_cpu<double>(c); }
