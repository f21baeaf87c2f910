// Copyright 2026 The kbisect Authors.
#include "coordinator/sqlite_statement.h"

#include <sqlite3.h>

namespace kbisect {

SqliteStatement::SqliteStatement(sqlite3* db, const char* sql) {
  rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

bool SqliteStatement::ok() const { return rc_ == SQLITE_OK; }

void SqliteStatement::Bind(int i, const std::string& text) {
  sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

void SqliteStatement::BindBlob(int i, const std::string& blob) {
  sqlite3_bind_blob(stmt_, i, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
}

void SqliteStatement::Bind(int i, int64_t value) { sqlite3_bind_int64(stmt_, i, value); }

void SqliteStatement::BindNull(int i) { sqlite3_bind_null(stmt_, i); }

bool SqliteStatement::Run() {
  rc_ = sqlite3_step(stmt_);
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  return rc_ == SQLITE_DONE;
}

bool SqliteStatement::Next() {
  rc_ = sqlite3_step(stmt_);
  return rc_ == SQLITE_ROW;
}

bool SqliteStatement::done() const { return rc_ == SQLITE_DONE; }

void SqliteStatement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string SqliteStatement::Text(int column) const {
  const void* data = sqlite3_column_blob(stmt_, column);
  const int size = sqlite3_column_bytes(stmt_, column);
  return data == nullptr ? std::string() : std::string(static_cast<const char*>(data), size);
}

int64_t SqliteStatement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }

bool SqliteStatement::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

absl::Status SqliteStatus(int code, const std::string& message) {
  switch (code & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(message);
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return absl::PermissionDeniedError(message);
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(message);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace kbisect
