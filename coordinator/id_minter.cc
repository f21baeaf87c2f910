// Copyright 2026 The kbisect Authors.
#include "coordinator/id_minter.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kbisect {

IdMinter::IdMinter() {
  std::random_device device;
  salt_ = absl::StrFormat("%06x", device() & 0xffffff);
}

std::string IdMinter::Next(absl::string_view prefix) {
  return absl::StrCat(prefix, salt_, "-", ++count_);
}

}  // namespace kbisect
