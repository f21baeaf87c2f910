// Copyright 2026 The kbisect Authors.
#include "coordinator/root_cause/code_hunks.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "coordinator/root_cause/unified_diff.h"
#include "re2/re2.h"

namespace kbisect {
namespace root_cause_internal {
namespace {

int IndentOf(const std::string& text) {
  int indent = 0;
  for (char c : text) {
    if (c == ' ') {
      ++indent;
    } else if (c == '\t') {
      indent += 4;
    } else {
      break;
    }
  }
  return indent;
}

// True for a Python line that opens or closes a docstring (a line that is only a string).
bool StartsTripleQuote(absl::string_view trimmed) {
  if (!trimmed.empty() &&
      (trimmed[0] == 'r' || trimmed[0] == 'b' || trimmed[0] == 'f' || trimmed[0] == 'u')) {
    trimmed.remove_prefix(1);
  }
  return absl::StartsWith(trimmed, "\"\"\"") || absl::StartsWith(trimmed, "'''");
}

int CountTripleQuotes(absl::string_view s) {
  int count = 0;
  for (size_t pos = 0; pos + 3 <= s.size();) {
    if (s.substr(pos, 3) == "\"\"\"" || s.substr(pos, 3) == "'''") {
      ++count;
      pos += 3;
    } else {
      ++pos;
    }
  }
  return count;
}

bool EndsWithTripleQuote(absl::string_view trimmed) {
  return absl::EndsWith(trimmed, "\"\"\"") || absl::EndsWith(trimmed, "'''");
}

// True when a line whose odd triple quote is at its end opens a string (`x = """`) rather than
// closing a docstring that began above the hunk.
bool OpensString(absl::string_view trimmed) {
  absl::string_view before =
      absl::StripTrailingAsciiWhitespace(trimmed.substr(0, trimmed.size() - 3));
  if (!before.empty() && (before.back() == 'r' || before.back() == 'f' || before.back() == 'b')) {
    before.remove_suffix(1);
  }
  if (before.empty()) return true;
  const char last = before.back();
  return last == '=' || last == '(' || last == '[' || last == '{' || last == ',' || last == ':' ||
         absl::EndsWith(before, "return");
}

Hunk AnalyseHunk(const DiffHunk& source, Lang lang) {
  Hunk hunk;
  hunk.header = source.header;
  bool in_block = false;
  bool in_docstring = false;
  // Lines before this index are known not to be inside a docstring that began above the hunk.
  size_t doc_floor = 0;
  for (const DiffLine& diff_line : source.lines) {
    Line line;
    line.kind = diff_line.kind;
    line.raw = diff_line.text;
    line.indent = IndentOf(line.raw);
    bool opens_string = false;
    if (lang == Lang::kPython) {
      const absl::string_view trimmed = absl::StripAsciiWhitespace(line.raw);
      const int quotes = CountTripleQuotes(trimmed);
      if (in_docstring) {
        // Docstring (or multi-line string) text: no code.
        if (quotes % 2 == 1) {
          in_docstring = false;
          doc_floor = hunk.lines.size() + 1;
        }
        hunk.lines.push_back(std::move(line));
        continue;
      }
      if (StartsTripleQuote(trimmed)) {
        // A bare delimiter opens a docstring right after a "def ...:" line (or a string
        // argument after "(", "," or "="); elsewhere it closes one that began above the hunk.
        const bool bare = quotes == 1 && (trimmed.size() == 3 || trimmed.size() == 4);
        bool after_header = false;
        for (auto it = hunk.lines.rbegin(); it != hunk.lines.rend(); ++it) {
          if (it->kind == '-' && line.kind == '+') continue;
          if (it->kind == '+' && line.kind == '-') continue;
          const absl::string_view previous = absl::StripAsciiWhitespace(it->raw);
          if (previous.empty()) continue;
          const char last = previous.back();
          after_header = last == ':' || last == '(' || last == ',' || last == '=' || last == '[' ||
                         last == '{';
          break;
        }
        if (bare && !after_header) {
          for (size_t k = doc_floor; k < hunk.lines.size(); ++k) {
            hunk.lines[k].code.clear();
            hunk.lines[k].norm.clear();
          }
          doc_floor = hunk.lines.size() + 1;
          hunk.lines.push_back(std::move(line));
          continue;
        }
        if (quotes % 2 == 1) in_docstring = true;
        doc_floor = hunk.lines.size() + 1;
        hunk.lines.push_back(std::move(line));
        continue;
      }
      if (quotes % 2 == 1) {
        if (EndsWithTripleQuote(trimmed) && !OpensString(trimmed)) {
          // The end of a docstring that began above the hunk: the lines since were docstring.
          for (size_t k = doc_floor; k < hunk.lines.size(); ++k) {
            hunk.lines[k].code.clear();
            hunk.lines[k].norm.clear();
          }
          doc_floor = hunk.lines.size() + 1;
          hunk.lines.push_back(std::move(line));
          continue;
        }
        opens_string = true;
      }
    }
    line.code = StripComment(line.raw, lang, &in_block);
    line.norm = RemoveWhitespace(line.code);
    hunk.lines.push_back(std::move(line));
    if (opens_string) {
      in_docstring = true;
      doc_floor = hunk.lines.size();
    }
  }
  return hunk;
}

// Marks lines that only moved: each removed line is paired with an identical added line
// elsewhere in the patch, first come first served.
void MarkMoves(std::vector<File>* files) {
  struct Where {
    int file, hunk, line;
  };
  std::map<std::string, std::vector<Where>> removed;
  for (int f = 0; f < static_cast<int>(files->size()); ++f) {
    for (int h = 0; h < static_cast<int>((*files)[f].hunks.size()); ++h) {
      const std::vector<Line>& lines = (*files)[f].hunks[h].lines;
      for (int l = 0; l < static_cast<int>(lines.size()); ++l) {
        if (lines[l].kind == '-' && !lines[l].norm.empty())
          removed[lines[l].norm].push_back({f, h, l});
      }
    }
  }
  std::map<std::string, size_t> used;
  for (int f = 0; f < static_cast<int>(files->size()); ++f) {
    for (int h = 0; h < static_cast<int>((*files)[f].hunks.size()); ++h) {
      std::vector<Line>& lines = (*files)[f].hunks[h].lines;
      for (int l = 0; l < static_cast<int>(lines.size()); ++l) {
        Line& added = lines[l];
        if (added.kind != '+' || added.norm.empty()) continue;
        auto it = removed.find(added.norm);
        if (it == removed.end()) continue;
        size_t& next = used[added.norm];
        if (next >= it->second.size()) continue;
        const Where where = it->second[next++];
        Line& twin = (*files)[where.file].hunks[where.hunk].lines[where.line];
        added.moved = twin.moved = true;
        added.twin_file = where.file;
        added.twin_hunk = where.hunk;
        added.twin_line = where.line;
        twin.twin_file = f;
        twin.twin_hunk = h;
        twin.twin_line = l;
      }
    }
  }
}

bool IsLoopHeader(const std::string& code) {
  static const auto* const kLoop =
      new RE2(R"(^\s*(?:async\s+)?(?:for|while)\b|^\s*do\s*(?:\{|$)|\bscf\.(?:for|while)\b)");
  return RE2::PartialMatch(code, *kLoop);
}

bool IsFunctionHeader(const std::string& code) {
  static const auto* const kFunction =
      new RE2(R"(^\s*(?:async\s+)?def\s|__global__|\btt\.func\b|\bfunc\.func\b)");
  return RE2::PartialMatch(code, *kFunction);
}

}  // namespace

std::string RemoveWhitespace(absl::string_view s) {
  std::string out;
  for (char c : s) {
    if (!absl::ascii_isspace(static_cast<unsigned char>(c))) out.push_back(c);
  }
  return out;
}

std::vector<File> AnalysePatch(std::string_view unified_patch) {
  std::vector<File> files;
  for (const FileDiff& diff : ParseUnifiedDiff(unified_patch)) {
    File file;
    file.path = diff.path();
    file.lang = LanguageOf(file.path);
    if (file.lang.lang == Lang::kDoc || diff.is_binary) continue;
    for (const DiffHunk& hunk : diff.hunks) file.hunks.push_back(AnalyseHunk(hunk, file.lang.lang));
    files.push_back(std::move(file));
  }
  MarkMoves(&files);
  return files;
}

bool InsideLoop(const std::vector<Line>& lines, int index, bool new_side) {
  const Line& self = lines[index];
  if (IsLoopHeader(self.code)) return true;
  int current = self.indent;
  for (int j = index - 1; j >= 0 && current > 0; --j) {
    const Line& line = lines[j];
    if (line.kind == (new_side ? '-' : '+')) continue;
    const absl::string_view trimmed = absl::StripAsciiWhitespace(line.code);
    if (trimmed.empty() || trimmed == "{" || trimmed == "}") continue;
    if (line.indent >= current) continue;
    if (IsLoopHeader(line.code)) return true;
    if (IsFunctionHeader(line.code)) return false;
    current = line.indent;
  }
  return false;
}

}  // namespace root_cause_internal
}  // namespace kbisect
