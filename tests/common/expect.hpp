/// @file
/// @brief Checks shared by the tests: a call rejected with
/// resproj::invalid_argument naming the expected argument.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>

#include "resproj/core/errors.hpp"

namespace resproj_test {

/// Runs `f`; expects resproj::invalid_argument whose argument() is
/// `argument` and whose message names it.
inline void expect_invalid(const std::function<void()> &f, const std::string &argument) {
  try {
    f();
    ADD_FAILURE() << "no invalid_argument thrown; expected one naming " << argument;
  } catch (const resproj::invalid_argument &e) {
    EXPECT_EQ(e.argument(), argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(argument), std::string::npos) << e.what();
  } catch (const std::exception &e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

} // namespace resproj_test
