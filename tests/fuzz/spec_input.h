// Copyright 2026 The kbisect Authors.
//
// The input layout of the metric fuzz targets (metric_fuzz, metric_suite_fuzz): the first byte
// picks the mode (auto, regex or JSON path); for regex and JSON path the first line is the
// pattern or path and the rest the output.
#ifndef KBISECT_TESTS_FUZZ_SPEC_INPUT_H_
#define KBISECT_TESTS_FUZZ_SPEC_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kbisect_fuzz {

struct SpecInput {
  std::string spec_text;    // "auto", "regex:PATTERN" or "json:PATH".
  std::string_view output;  // The benchmark output, a view into the fuzzer's data.
};

// Splits a fuzzer input of `size` >= 1 bytes.
inline SpecInput SplitSpecInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  SpecInput split{"auto", input};
  if (data[0] % 3 != 0) {
    const size_t newline = input.find('\n');
    const std::string_view pattern = input.substr(0, newline);
    split.output =
        newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);
    split.spec_text = (data[0] % 3 == 1 ? "regex:" : "json:") + std::string(pattern);
  }
  return split;
}

}  // namespace kbisect_fuzz

#endif  // KBISECT_TESTS_FUZZ_SPEC_INPUT_H_
