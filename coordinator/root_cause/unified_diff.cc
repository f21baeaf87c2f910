// Copyright 2026 The kbisect Authors.
#include "coordinator/root_cause/unified_diff.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "re2/re2.h"

namespace kbisect {
namespace {

// Reads one path token at the start of `s` (git quotes paths with unusual characters, using C
// escapes) and returns it; `rest` receives what follows it.
std::string ReadPathToken(absl::string_view s, absl::string_view* rest) {
  if (!s.empty() && s.front() == '"') {
    std::string out;
    size_t i = 1;
    for (; i < s.size() && s[i] != '"'; ++i) {
      if (s[i] != '\\' || i + 1 >= s.size()) {
        out.push_back(s[i]);
        continue;
      }
      const char c = s[++i];
      if (c >= '0' && c <= '7') {
        int value = 0;
        int digits = 0;
        while (digits < 3 && i < s.size() && s[i] >= '0' && s[i] <= '7') {
          value = value * 8 + (s[i] - '0');
          ++i;
          ++digits;
        }
        --i;
        out.push_back(static_cast<char>(value));
      } else if (c == 'n') {
        out.push_back('\n');
      } else if (c == 't') {
        out.push_back('\t');
      } else {
        out.push_back(c);
      }
    }
    if (rest != nullptr) *rest = i < s.size() ? s.substr(i + 1) : absl::string_view();
    return out;
  }
  // Unquoted: up to a tab (plain diff puts a timestamp there) or the end.
  const size_t tab = s.find('\t');
  if (rest != nullptr) *rest = tab == absl::string_view::npos ? absl::string_view() : s.substr(tab);
  return std::string(s.substr(0, tab));
}

// Drops git's "a/" or "b/" prefix; "/dev/null" becomes empty.
std::string StripPrefix(std::string path) {
  if (path == "/dev/null") return "";
  if (absl::StartsWith(path, "a/") || absl::StartsWith(path, "b/")) return path.substr(2);
  return path;
}

// Parses the two paths of "diff --git a/X b/Y" (the part after "diff --git ").
void ParseGitHeaderPaths(absl::string_view s, FileDiff* file) {
  if (!s.empty() && s.front() == '"') {
    absl::string_view rest;
    file->old_path = StripPrefix(ReadPathToken(s, &rest));
    if (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    file->new_path = StripPrefix(ReadPathToken(rest, nullptr));
    return;
  }
  // "a/X b/X" without a rename: both halves are equal, which finds the split even when X has
  // spaces. Otherwise split at the first " b/" (or the last quote for a quoted second path).
  if (s.size() >= 5 && (s.size() - 1) % 2 == 0) {
    const size_t half = (s.size() - 1) / 2;
    absl::string_view left = s.substr(0, half);
    absl::string_view right = s.substr(half + 1);
    if (s[half] == ' ' && left.size() > 2 && right.size() > 2 &&
        left.substr(2) == right.substr(2)) {
      file->old_path = StripPrefix(std::string(left));
      file->new_path = StripPrefix(std::string(right));
      return;
    }
  }
  size_t split = s.find(" b/");
  if (split == absl::string_view::npos) split = s.find(" \"");
  if (split == absl::string_view::npos) split = s.find(' ');
  if (split == absl::string_view::npos) {
    file->old_path = file->new_path = StripPrefix(std::string(s));
    return;
  }
  file->old_path = StripPrefix(std::string(s.substr(0, split)));
  file->new_path = StripPrefix(ReadPathToken(s.substr(split + 1), nullptr));
}

}  // namespace

std::vector<FileDiff> ParseUnifiedDiff(std::string_view patch_view) {
  const absl::string_view patch(patch_view.data(), patch_view.size());
  static const RE2 kHunkHeader(R"(^@@+ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@+.*$)");
  std::vector<FileDiff> files;
  FileDiff* file = nullptr;
  DiffHunk* hunk = nullptr;
  int old_left = 0;
  int new_left = 0;
  int old_line = 0;
  int new_line = 0;
  // True between a "--- " header and its "+++ " line.
  bool expect_plus = false;

  auto start_file = [&]() {
    files.emplace_back();
    file = &files.back();
    hunk = nullptr;
    old_left = new_left = 0;
    expect_plus = false;
  };

  for (absl::string_view line : absl::StrSplit(patch, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);

    if (hunk != nullptr && (old_left > 0 || new_left > 0)) {
      DiffLine body;
      const char marker = line.empty() ? ' ' : line.front();
      if (marker == ' ' && old_left > 0 && new_left > 0) {
        body.kind = ' ';
        body.old_line = old_line++;
        body.new_line = new_line++;
        --old_left;
        --new_left;
      } else if (marker == '-' && old_left > 0) {
        body.kind = '-';
        body.old_line = old_line++;
        --old_left;
      } else if (marker == '+' && new_left > 0) {
        body.kind = '+';
        body.new_line = new_line++;
        --new_left;
      } else if (marker == '\\') {
        continue;  // "\ No newline at end of file".
      } else {
        old_left = new_left = 0;  // A truncated hunk: read the line as a header below.
        body.kind = 0;
      }
      if (body.kind != 0) {
        body.text = std::string(line.empty() ? line : line.substr(1));
        hunk->lines.push_back(std::move(body));
        continue;
      }
    }

    if (absl::StartsWith(line, "diff --git ")) {
      start_file();
      ParseGitHeaderPaths(line.substr(11), file);
      continue;
    }
    if (absl::StartsWith(line, "--- ")) {
      // Plain `diff -u` output has no "diff --git" line: a "--- " after a hunk starts a file.
      if (file == nullptr || !file->hunks.empty()) start_file();
      file->old_path = StripPrefix(ReadPathToken(line.substr(4), nullptr));
      if (file->old_path.empty()) file->is_new = true;
      expect_plus = true;
      continue;
    }
    if (absl::StartsWith(line, "+++ ") && file != nullptr && (expect_plus || file->hunks.empty())) {
      file->new_path = StripPrefix(ReadPathToken(line.substr(4), nullptr));
      if (file->new_path.empty()) file->is_deleted = true;
      expect_plus = false;
      continue;
    }
    if (file != nullptr && hunk == nullptr) {
      if (absl::StartsWith(line, "rename from ")) {
        file->old_path = ReadPathToken(line.substr(12), nullptr);
        file->is_rename = true;
        continue;
      }
      if (absl::StartsWith(line, "rename to ")) {
        file->new_path = ReadPathToken(line.substr(10), nullptr);
        file->is_rename = true;
        continue;
      }
      if (absl::StartsWith(line, "new file mode")) {
        file->is_new = true;
        continue;
      }
      if (absl::StartsWith(line, "deleted file mode")) {
        file->is_deleted = true;
        continue;
      }
      if (absl::StartsWith(line, "Binary files ") || line == "GIT binary patch") {
        file->is_binary = true;
        continue;
      }
    }
    std::string old_start, old_count, new_start, new_count;
    if (absl::StartsWith(line, "@@") &&
        RE2::FullMatch(re2::StringPiece(line.data(), line.size()), kHunkHeader, &old_start,
                       &old_count, &new_start, &new_count)) {
      if (file == nullptr) start_file();
      file->hunks.emplace_back();
      hunk = &file->hunks.back();
      hunk->header = std::string(line);
      int value = 0;
      hunk->old_start = absl::SimpleAtoi(old_start, &value) ? value : 0;
      hunk->old_count = old_count.empty() ? 1 : (absl::SimpleAtoi(old_count, &value) ? value : 0);
      hunk->new_start = absl::SimpleAtoi(new_start, &value) ? value : 0;
      hunk->new_count = new_count.empty() ? 1 : (absl::SimpleAtoi(new_count, &value) ? value : 0);
      old_left = hunk->old_count;
      new_left = hunk->new_count;
      old_line = hunk->old_start;
      new_line = hunk->new_start;
      expect_plus = false;
      continue;
    }
  }
  // The deleted/new side of a file keeps its path empty; a rename keeps both.
  for (FileDiff& f : files) {
    if (f.is_new && !f.is_rename) f.old_path.clear();
    if (f.is_deleted && !f.is_rename) f.new_path.clear();
  }
  return files;
}

}  // namespace kbisect
