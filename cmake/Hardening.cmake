# Hardening builds (issue 16). Each is off by default and meant for its own build directory:
#   -DKBISECT_SANITIZE=address,undefined   ASan + UBSan (any -fsanitize= list; clang or GCC)
#   -DKBISECT_THREAD_SAFETY=ON             clang's -Wthread-safety over project code, as errors
#   -DKBISECT_FUZZ=ON                      libFuzzer targets in tests/fuzz (clang only)
# scripts/test.sh --sanitize LIST and scripts/fuzz.sh drive them; docs/operations.md "Hardening".
set(KBISECT_SANITIZE "" CACHE STRING "Comma-separated -fsanitize= list (address,undefined,...)")
option(KBISECT_THREAD_SAFETY "clang -Wthread-safety -Werror over project code" OFF)
option(KBISECT_FUZZ "Build the libFuzzer targets in tests/fuzz (clang)" OFF)

if(KBISECT_THREAD_SAFETY)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "KBISECT_THREAD_SAFETY needs clang (-DCMAKE_CXX_COMPILER=clang++)")
  endif()
  # -Wthread-safety checks ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED / ABSL_LOCKS_EXCLUDED
  # in project code only (KBISECT_WARNINGS is not applied to generated or third-party code).
  # -beta is left out: it flags every absl::MutexLock over a member of another object.
  list(APPEND KBISECT_WARNINGS -Wthread-safety)
endif()

if(KBISECT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "KBISECT_FUZZ needs clang (-DCMAKE_CXX_COMPILER=clang++)")
  endif()
  # Coverage instrumentation for everything (so the parsers' libraries are traced), the
  # libFuzzer main only in the fuzz targets (tests/fuzz/CMakeLists.txt).
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

if(KBISECT_SANITIZE)
  string(REPLACE ";" "," _kbisect_san "${KBISECT_SANITIZE}")
  # Every report is fatal: UBSan does not recover, so ctest sees a failing test.
  add_compile_options(-fsanitize=${_kbisect_san} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${_kbisect_san})
  if(_kbisect_san MATCHES "undefined")
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
endif()
