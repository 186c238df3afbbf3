# Script run by ctest (cmake -P): one step of the consumer tests.
#
# CONSUMER_MODE=install       install RESPROJ_BINARY_DIR into CONSUMER_PREFIX
# CONSUMER_MODE=subdirectory  configure, build and run tests/consumer with
#                             add_subdirectory(RESPROJ_SOURCE_DIR)
# CONSUMER_MODE=package       the same with find_package(resproj) from
#                             CONSUMER_PREFIX; CONSUMER_EXPECT_GPU and
#                             CONSUMER_EXPECT_COMPILED are checked, and
#                             CONSUMER_WITHOUT_CUDA=ON hides the CUDA Toolkit
#                             from the consumer
# Any failed step ends the script with FATAL_ERROR, so the test fails.

cmake_minimum_required(VERSION 3.24)

function(run_step what)
  message(STATUS "consumer: ${what}: ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "consumer: ${what} failed (${result})")
  endif()
endfunction()

if(CONSUMER_MODE STREQUAL "install")
  file(REMOVE_RECURSE "${CONSUMER_PREFIX}")
  set(config_args "")
  if(CONSUMER_BUILD_TYPE)
    set(config_args --config "${CONSUMER_BUILD_TYPE}")
  endif()
  run_step(install "${CMAKE_COMMAND}" --install "${RESPROJ_BINARY_DIR}" --prefix
           "${CONSUMER_PREFIX}" ${config_args})
  if(NOT EXISTS "${CONSUMER_PREFIX}/include/resproj/resproj.hpp")
    message(FATAL_ERROR "consumer: install left no include/resproj/resproj.hpp")
  endif()
  return()
endif()

if(NOT CONSUMER_MODE MATCHES "^(subdirectory|package)$")
  message(FATAL_ERROR "consumer: unknown CONSUMER_MODE '${CONSUMER_MODE}'")
endif()

set(configure_args
    -S "${CONSUMER_SOURCE_DIR}" -B "${CONSUMER_BINARY_DIR}"
    -DRESPROJ_CONSUMER_MODE=${CONSUMER_MODE}
    -DRESPROJ_SOURCE_DIR=${RESPROJ_SOURCE_DIR})
if(CONSUMER_GENERATOR)
  list(APPEND configure_args -G "${CONSUMER_GENERATOR}")
endif()
if(CONSUMER_CXX_COMPILER)
  list(APPEND configure_args "-DCMAKE_CXX_COMPILER=${CONSUMER_CXX_COMPILER}")
endif()
if(CONSUMER_BUILD_TYPE)
  list(APPEND configure_args "-DCMAKE_BUILD_TYPE=${CONSUMER_BUILD_TYPE}")
endif()
if(CONSUMER_MODE STREQUAL "subdirectory")
  # The CPU part is what this test is about; CUDA would only make it slow.
  list(APPEND configure_args -DRESPROJ_ENABLE_CUDA=OFF)
else()
  list(APPEND configure_args "-DCMAKE_PREFIX_PATH=${CONSUMER_PREFIX}"
       "-DRESPROJ_CONSUMER_EXPECT_GPU=${CONSUMER_EXPECT_GPU}"
       "-DRESPROJ_CONSUMER_EXPECT_COMPILED=${CONSUMER_EXPECT_COMPILED}")
  if(CONSUMER_WITHOUT_CUDA)
    list(APPEND configure_args -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON)
  elseif(CONSUMER_CUDA_ROOT)
    list(APPEND configure_args "-DCUDAToolkit_ROOT=${CONSUMER_CUDA_ROOT}")
  endif()
endif()

file(REMOVE_RECURSE "${CONSUMER_BINARY_DIR}")
run_step(configure "${CMAKE_COMMAND}" ${configure_args})

set(build_args "")
if(CONSUMER_BUILD_TYPE)
  set(build_args --config "${CONSUMER_BUILD_TYPE}")
endif()
run_step(build "${CMAKE_COMMAND}" --build "${CONSUMER_BINARY_DIR}" ${build_args})

# Single-config generators put the program in the binary directory,
# multi-config ones in a per-configuration subdirectory.
set(program "")
foreach(candidate "${CONSUMER_BINARY_DIR}/resproj_consumer"
                  "${CONSUMER_BINARY_DIR}/${CONSUMER_BUILD_TYPE}/resproj_consumer"
                  "${CONSUMER_BINARY_DIR}/resproj_consumer.exe"
                  "${CONSUMER_BINARY_DIR}/${CONSUMER_BUILD_TYPE}/resproj_consumer.exe")
  if(NOT program AND EXISTS "${candidate}" AND NOT IS_DIRECTORY "${candidate}")
    set(program "${candidate}")
  endif()
endforeach()
if(NOT program)
  message(FATAL_ERROR "consumer: built program not found in ${CONSUMER_BINARY_DIR}")
endif()
run_step(run "${program}")
