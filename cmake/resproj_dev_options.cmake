# Build settings shared by resproj's own tests, benchmarks and examples.
# Never applied to the exported targets, and not installed.

set(RESPROJ_SANITIZE_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer
                           -fno-sanitize-recover=all)

if(RESPROJ_SANITIZE AND RESPROJ_HAS_CUDA)
  message(STATUS "resproj: RESPROJ_SANITIZE instruments host C++ files only, not .cu files")
endif()

# resproj_dev_target(<target> [TEST])
#   Warnings, debug line info for device code and, with RESPROJ_SANITIZE,
#   ASan + UBSan for host C++ files. TEST marks a test executable: with
#   RESPROJ_CUDA_PER_THREAD_DEFAULT_STREAM its CUDA code uses the per-thread
#   default stream.
function(resproj_dev_target target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "TEST" "" "")

  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wpedantic>")
  endif()

  if(RESPROJ_HAS_CUDA)
    target_compile_options(
      ${target}
      PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:-lineinfo;-Xcudafe=--display_error_number;-Xcompiler=-Wall,-Wextra>")
    if(arg_TEST AND RESPROJ_CUDA_PER_THREAD_DEFAULT_STREAM)
      target_compile_options(${target}
                             PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--default-stream=per-thread>)
      # Host files that call the runtime directly get the same default stream.
      target_compile_definitions(
        ${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:CUDA_API_PER_THREAD_DEFAULT_STREAM=1>)
    endif()
  endif()

  if(RESPROJ_SANITIZE)
    target_compile_options(${target}
                           PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${RESPROJ_SANITIZE_FLAGS}>")
    target_link_options(${target} PRIVATE "$<$<LINK_LANGUAGE:CXX>:${RESPROJ_SANITIZE_FLAGS}>")
  endif()
endfunction()
