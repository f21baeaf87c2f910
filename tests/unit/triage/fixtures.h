// Copyright 2026 The kbisect Authors.
//
// Paths of the triage fixtures (tests/fixtures/triage) and a reader for them.
#ifndef KBISECT_TESTS_UNIT_TRIAGE_FIXTURES_H_
#define KBISECT_TESTS_UNIT_TRIAGE_FIXTURES_H_

#include <string>

#include "tests/testing/git_fixture.h"

namespace kbisect {
namespace triage {
namespace testing {

// Returns the absolute path of fixture `name`.
inline std::string FixturePath(const std::string& name) {
  return std::string(KBISECT_TRIAGE_FIXTURES) + "/" + name;
}

// Returns the contents of fixture `name`.
inline std::string Fixture(const std::string& name) {
  return kbisect::testing::ReadFile(FixturePath(name));
}

}  // namespace testing
}  // namespace triage
}  // namespace kbisect

#endif  // KBISECT_TESTS_UNIT_TRIAGE_FIXTURES_H_
