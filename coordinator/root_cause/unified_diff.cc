// Copyright 2026 The kbisect Authors.
#include "coordinator/root_cause/unified_diff.h"

#include <string>
#include <utility>
#include <vector>

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

// Reads a patch line by line into files and hunks: the parser's state between lines. A hunk's
// body is read by the line counts of its `@@` header.
class DiffReader {
 public:
  // Reads one line of the patch (without its "\n"; a trailing "\r" is dropped).
  void Read(absl::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (ReadHunkBody(line) || ReadFileHeader(line) || ReadExtendedHeader(line)) return;
    ReadHunkHeader(line);
  }

  // The files read, in patch order. The deleted or new side of a file keeps its path empty; a
  // rename keeps both.
  std::vector<FileDiff> Finish() && {
    for (FileDiff& f : files_) {
      if (f.is_new && !f.is_rename) f.old_path.clear();
      if (f.is_deleted && !f.is_rename) f.new_path.clear();
    }
    return std::move(files_);
  }

 private:
  // Starts the next file; no hunk is open.
  void StartFile() {
    files_.emplace_back();
    file_ = &files_.back();
    hunk_ = nullptr;
    old_left_ = new_left_ = 0;
    expect_plus_ = false;
  }

  // Reads `line` as the open hunk's next body line while the hunk has lines left: a context,
  // removed or added line, or a "\ No newline at end of file" marker. Returns false when it is
  // not one: no hunk is open, or the hunk was truncated (it is closed, and the line is read as a
  // header).
  bool ReadHunkBody(absl::string_view line) {
    if (hunk_ == nullptr || (old_left_ <= 0 && new_left_ <= 0)) return false;
    DiffLine body;
    const char marker = line.empty() ? ' ' : line.front();
    if (marker == ' ' && old_left_ > 0 && new_left_ > 0) {
      body.kind = ' ';
      body.old_line = old_line_++;
      body.new_line = new_line_++;
      --old_left_;
      --new_left_;
    } else if (marker == '-' && old_left_ > 0) {
      body.kind = '-';
      body.old_line = old_line_++;
      --old_left_;
    } else if (marker == '+' && new_left_ > 0) {
      body.kind = '+';
      body.new_line = new_line_++;
      --new_left_;
    } else if (marker == '\\') {
      return true;  // "\ No newline at end of file".
    } else {
      old_left_ = new_left_ = 0;  // A truncated hunk: read the line as a header.
      return false;
    }
    body.text = std::string(line.empty() ? line : line.substr(1));
    hunk_->lines.push_back(std::move(body));
    return true;
  }

  // Reads `line` as a file header: "diff --git a/... b/..." or "--- " (each may start a file)
  // or the "+++ " line that follows "--- ". Returns false when it is none of them.
  bool ReadFileHeader(absl::string_view line) {
    if (absl::StartsWith(line, "diff --git ")) {
      StartFile();
      ParseGitHeaderPaths(line.substr(11), file_);
      return true;
    }
    if (absl::StartsWith(line, "--- ")) {
      // Plain `diff -u` output has no "diff --git" line: a "--- " after a hunk starts a file.
      if (file_ == nullptr || !file_->hunks.empty()) StartFile();
      file_->old_path = StripPrefix(ReadPathToken(line.substr(4), nullptr));
      if (file_->old_path.empty()) file_->is_new = true;
      expect_plus_ = true;
      return true;
    }
    if (absl::StartsWith(line, "+++ ") && file_ != nullptr &&
        (expect_plus_ || file_->hunks.empty())) {
      file_->new_path = StripPrefix(ReadPathToken(line.substr(4), nullptr));
      if (file_->new_path.empty()) file_->is_deleted = true;
      expect_plus_ = false;
      return true;
    }
    return false;
  }

  // Reads `line` as one of git's extended headers before a file's first hunk: a rename, a new or
  // deleted file, a binary file. Returns false when it is none of them.
  bool ReadExtendedHeader(absl::string_view line) {
    if (file_ == nullptr || hunk_ != nullptr) return false;
    if (absl::StartsWith(line, "rename from ")) {
      file_->old_path = ReadPathToken(line.substr(12), nullptr);
      file_->is_rename = true;
      return true;
    }
    if (absl::StartsWith(line, "rename to ")) {
      file_->new_path = ReadPathToken(line.substr(10), nullptr);
      file_->is_rename = true;
      return true;
    }
    if (absl::StartsWith(line, "new file mode")) {
      file_->is_new = true;
      return true;
    }
    if (absl::StartsWith(line, "deleted file mode")) {
      file_->is_deleted = true;
      return true;
    }
    if (absl::StartsWith(line, "Binary files ") || line == "GIT binary patch") {
      file_->is_binary = true;
      return true;
    }
    return false;
  }

  // Reads `line` as a hunk header "@@ -a,b +c,d @@ ..." (a count left out is 1) and opens the
  // hunk in the current file (a file of its own when there is none). Returns false when it is not
  // one.
  bool ReadHunkHeader(absl::string_view line) {
    static const RE2 kHunkHeader(R"(^@@+ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@+.*$)");
    std::string old_start, old_count, new_start, new_count;
    if (!absl::StartsWith(line, "@@") ||
        !RE2::FullMatch(re2::StringPiece(line.data(), line.size()), kHunkHeader, &old_start,
                        &old_count, &new_start, &new_count)) {
      return false;
    }
    if (file_ == nullptr) StartFile();
    file_->hunks.emplace_back();
    hunk_ = &file_->hunks.back();
    hunk_->header = std::string(line);
    int value = 0;
    hunk_->old_start = absl::SimpleAtoi(old_start, &value) ? value : 0;
    hunk_->old_count = old_count.empty() ? 1 : (absl::SimpleAtoi(old_count, &value) ? value : 0);
    hunk_->new_start = absl::SimpleAtoi(new_start, &value) ? value : 0;
    hunk_->new_count = new_count.empty() ? 1 : (absl::SimpleAtoi(new_count, &value) ? value : 0);
    old_left_ = hunk_->old_count;
    new_left_ = hunk_->new_count;
    old_line_ = hunk_->old_start;
    new_line_ = hunk_->new_start;
    expect_plus_ = false;
    return true;
  }

  std::vector<FileDiff> files_;
  FileDiff* file_ = nullptr;  // The file being read, in files_.
  DiffHunk* hunk_ = nullptr;  // Its hunk being read.
  // The open hunk's old and new lines still to read, and the next line numbers.
  int old_left_ = 0;
  int new_left_ = 0;
  int old_line_ = 0;
  int new_line_ = 0;
  // True between a "--- " header and its "+++ " line.
  bool expect_plus_ = false;
};

}  // namespace

std::vector<FileDiff> ParseUnifiedDiff(std::string_view patch_view) {
  const absl::string_view patch(patch_view.data(), patch_view.size());
  DiffReader reader;
  for (absl::string_view line : absl::StrSplit(patch, '\n')) reader.Read(line);
  return std::move(reader).Finish();
}

}  // namespace kbisect
