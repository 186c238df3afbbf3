/// @file
/// @brief Checks shared by the tests: a call rejected with
/// resproj::invalid_argument naming the expected argument.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

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

/// `call` throws resproj::invalid_argument whose argument() is `argument`,
/// whose message names it and contains every string of `details`.
template <class F>
::testing::AssertionResult throws_naming(F &&call, const std::string &argument,
                                         const std::vector<std::string> &details = {}) {
  try {
    call();
  } catch (const resproj::invalid_argument &e) {
    const std::string what = e.what();
    if (e.argument() != argument)
      return ::testing::AssertionFailure() << "argument() is \"" << e.argument()
                                           << "\", expected \"" << argument << "\"";
    if (what.find(argument) == std::string::npos)
      return ::testing::AssertionFailure()
             << "what() \"" << what << "\" lacks " << argument;
    for (const auto &d : details)
      if (what.find(d) == std::string::npos)
        return ::testing::AssertionFailure() << "what() \"" << what << "\" lacks " << d;
    return ::testing::AssertionSuccess();
  } catch (const std::exception &e) {
    return ::testing::AssertionFailure() << "threw another exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw (expected " << argument << ")";
}

/// The two vectors hold the same bits.
template <class T> bool bitwise_equal(const std::vector<T> &a, const std::vector<T> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

} // namespace resproj_test
