// Copyright 2026 The kbisect Authors.
//
// The version of kbisect's binaries: what `kbisect version` prints and the coordinator's
// kbisect_build_info metric labels.
#ifndef KBISECT_COMMON_VERSION_H_
#define KBISECT_COMMON_VERSION_H_

namespace kbisect {

inline constexpr char kKbisectVersion[] = "0.1.0";

}  // namespace kbisect

#endif  // KBISECT_COMMON_VERSION_H_
