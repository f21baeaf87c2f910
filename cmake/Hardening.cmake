# Hardening builds (issue 16). Each is off by default and meant for its own build directory:
#   -DKBISECT_SANITIZE=address,undefined   ASan + UBSan (any -fsanitize= list; clang or GCC)
#   -DKBISECT_SANITIZE=thread              TSan (common/sync makes the project's locks visible)
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
  if(_kbisect_san MATCHES "thread")
    if(_kbisect_san MATCHES "address|leak|memory")
      message(FATAL_ERROR "-fsanitize=thread cannot be combined with ${_kbisect_san}: "
                          "give -DKBISECT_SANITIZE=thread a build directory of its own")
    endif()
    if(KBISECT_FUZZ)
      message(FATAL_ERROR "KBISECT_FUZZ builds with ASan and cannot be combined with TSan")
    endif()
    # tests/sanitizers/tsan.supp, compiled into every executable as __tsan_default_suppressions,
    # so that a process started without TSAN_OPTIONS (bundle_test's `env -i`, a binary run by
    # hand) keeps them. Editing the file re-runs CMake.
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                 ${PROJECT_SOURCE_DIR}/tests/sanitizers/tsan.supp)
    file(READ ${PROJECT_SOURCE_DIR}/tests/sanitizers/tsan.supp KBISECT_TSAN_SUPPRESSIONS)
    configure_file(${PROJECT_SOURCE_DIR}/tests/sanitizers/tsan_default_suppressions.cc.in
                   ${CMAKE_BINARY_DIR}/tsan_default_suppressions.cc @ONLY)
    add_library(kbisect_tsan_suppressions OBJECT ${CMAKE_BINARY_DIR}/tsan_default_suppressions.cc)
  endif()
endif()

# kbisect_link_sanitizer_defaults(): called once at the end of the top-level CMakeLists.txt;
# links the TSan suppressions (above) into every executable target defined in the tree.
function(kbisect_link_sanitizer_defaults)
  if(NOT TARGET kbisect_tsan_suppressions)
    return()
  endif()
  set(dirs ${PROJECT_SOURCE_DIR})
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${subdirs})
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target ${targets})
      get_target_property(type ${target} TYPE)
      if(type STREQUAL "EXECUTABLE")
        target_link_libraries(${target} PRIVATE kbisect_tsan_suppressions)
      endif()
    endforeach()
  endwhile()
endfunction()
