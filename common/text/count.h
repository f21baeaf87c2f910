// Copyright 2026 The kbisect Authors.
//
// The one plural rule of every count kbisect prints, in the terminal, the job page and the
// Markdown summary: the noun is singular for exactly one, plural otherwise (0 probes, 1 probe,
// 2 probes). The plural adds "s" unless it is given (irregular words).
//
//   Count(3, "probe")                    == "3 probes"
//   Count(1, "bench run")                == "1 bench run"
//   Count(2, "nightly", "nightlies")     == "2 nightlies"
//   Noun(n, "probe")                     == "probe" or "probes", for "n probes cancelled" split
//                                           across a sentence.
#ifndef KBISECT_COMMON_TEXT_COUNT_H_
#define KBISECT_COMMON_TEXT_COUNT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace kbisect {

// `singular`, or its plural (`plural`, or `singular` + "s" when `plural` is empty) unless n == 1.
std::string Noun(int64_t n, std::string_view singular, std::string_view plural = {});

// "N noun": `n` then Noun(n, singular, plural).
std::string Count(int64_t n, std::string_view singular, std::string_view plural = {});

}  // namespace kbisect

#endif  // KBISECT_COMMON_TEXT_COUNT_H_
