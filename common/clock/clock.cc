// Copyright 2026 The kbisect Authors.
#include "common/clock/clock.h"

namespace kbisect {
namespace {

class RealClock : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

}  // namespace

Clock* Clock::Real() {
  static RealClock* clock = new RealClock();
  return clock;
}

}  // namespace kbisect
