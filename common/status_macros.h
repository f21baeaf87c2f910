// Copyright 2026 The kbisect Authors.
//
// Error-propagation macros for absl::Status and absl::StatusOr<T>.
//
// Bookworm's abseil (20220623) ships neither RETURN_IF_ERROR nor ASSIGN_OR_RETURN, so kbisect
// keeps these two small ones. They evaluate their argument exactly once.
//
//   RETURN_IF_ERROR(DoThing());                       // returns the status if it is not OK
//   ASSIGN_OR_RETURN(auto repo, GitRepo::Open(dir));  // returns the status, or binds the value
//
#ifndef KBISECT_COMMON_STATUS_MACROS_H_
#define KBISECT_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define KBISECT_STATUS_CONCAT_INNER_(a, b) a##b
#define KBISECT_STATUS_CONCAT_(a, b) KBISECT_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status) and returns it from the enclosing function if it is not OK.
#define RETURN_IF_ERROR(expr)                                          \
  do {                                                                 \
    ::absl::Status kbisect_status_ = (expr);                           \
    if (!kbisect_status_.ok()) return kbisect_status_;                 \
  } while (0)

#define KBISECT_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                   \
  if (!statusor.ok()) return statusor.status();              \
  lhs = std::move(statusor).value()

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status from the enclosing
// function, otherwise moves the value into `lhs` (which may be a declaration).
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  KBISECT_ASSIGN_OR_RETURN_IMPL_(KBISECT_STATUS_CONCAT_(kbisect_statusor_, __LINE__), lhs, rexpr)

#endif  // KBISECT_COMMON_STATUS_MACROS_H_
