/// @file
/// @brief The CPU backend as an executor of the contract suite
/// (contract_suite.hpp): `cpu::forward` / `cpu::back` on the host arrays
/// themselves.
#pragma once

#include <string>

#include "contract/contract_suite.hpp"
#include "resproj/core/span.hpp"
#include "resproj/core/views.hpp"
#include "resproj/cpu/projector.hpp"

namespace resproj_contract {

template <class T> struct cpu_executor {
  using value_type = T;
  static constexpr bool supports_tof = true;
  static constexpr bool ordered_sums = true;
  static std::string unavailable() { return std::string(); }
  static std::string out_name() { return "out"; }
  static std::string values_name() { return "values"; }

  template <class Op>
  static void forward(const Op &o, rp::image_view<const T> image,
                      rp::lor_view<const T> lors, rp::span<T> out) {
    rp::cpu::forward(o, image, lors, out);
  }
  template <class Op>
  static void back(const Op &o, rp::image_view<T> image, rp::lor_view<const T> lors,
                   rp::span<const T> values) {
    rp::cpu::back(o, image, lors, values);
  }
};

} // namespace resproj_contract
