// Copyright 2026 The kbisect Authors.

#include "common/search/verdict.h"

namespace kbisect {

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kGood:
      return "good";
    case Verdict::kBad:
      return "bad";
    case Verdict::kSkip:
      return "skip";
  }
  return "unknown";
}

}  // namespace kbisect
