// Copyright 2026 The kbisect Authors.
//
// Small helpers over the sqlite3 C API shared by the coordinator's SQLite files (the job store,
// the result cache): a prepared statement that finalizes itself, and the absl::Status of a
// SQLite result code.
//
//   SqliteStatement insert(db, "INSERT INTO t(a, b) VALUES(?, ?)");
//   if (!insert.ok()) return ...;
//   insert.Bind(1, std::string("x"));
//   insert.Bind(2, int64_t{7});
//   if (!insert.Run()) return ...;
#ifndef KBISECT_COORDINATOR_SQLITE_STATEMENT_H_
#define KBISECT_COORDINATOR_SQLITE_STATEMENT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace kbisect {

// A prepared statement, finalized when it goes out of scope. Not thread-safe: its connection's
// owner serializes its use.
class SqliteStatement {
 public:
  // Prepares `sql` on `db`; ok() says whether that worked.
  SqliteStatement(sqlite3* db, const char* sql);
  ~SqliteStatement();
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  // Whether the preparation succeeded; check it before the first step.
  bool ok() const;

  // Bind parameter `i` (1-based) to a copy of `text` (as TEXT), `blob` (as BLOB), `value` or
  // NULL.
  void Bind(int i, const std::string& text);
  void BindBlob(int i, const std::string& blob);
  void Bind(int i, int64_t value);
  void BindNull(int i);

  // Runs a statement that returns no rows, then resets it for new bindings. True on success.
  bool Run();
  // Advances to the next row; false at the end or on error (see done()).
  bool Next();
  // True when the last Next() reached the end of the rows (rather than failing).
  bool done() const;
  // Makes a query statement ready to run again with new bindings.
  void Reset();

  // Column `column` (0-based) of the current row: its bytes (empty for NULL), its integer, or
  // whether it is NULL.
  std::string Text(int column) const;
  int64_t Int(int column) const;
  bool IsNull(int column) const;

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = 0;
};

// The status for SQLite result `code` with `message`: DataLoss for a corrupt file or one that is
// not a database, PermissionDenied for permission and read-only errors, FailedPrecondition when
// the database is busy or locked, Internal otherwise.
absl::Status SqliteStatus(int code, const std::string& message);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_SQLITE_STATEMENT_H_
