// Replacement of the global operator new for the fault tests: every
// allocation counts as a call of the family "new" of the interposer
// (fault_control.h) and throws std::bad_alloc when that call is armed to
// fail. Defined in the test executable itself, which comes first in the
// symbol lookup order (before the C++ runtime and, under ASan, the
// sanitizer's own operator new). Memory comes from malloc and goes back to
// free, so that new and delete always match.
#include <cstddef>
#include <cstdlib>
#include <new>

#include "fault_control.h"

void *operator new(std::size_t n) {
  if (fault_hit("new") != 0)
    throw std::bad_alloc();
  if (void *p = std::malloc(n == 0 ? 1 : n))
    return p;
  throw std::bad_alloc();
}

void *operator new[](std::size_t n) { return ::operator new(n); }

void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }

void *operator new(std::size_t n, const std::nothrow_t &) noexcept {
  try {
    return ::operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept {
  return ::operator new(n, std::nothrow);
}
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { std::free(p); }
