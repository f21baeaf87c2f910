// Copyright 2026 The kbisect Authors.
#include "coordinator/root_cause/root_cause.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "coordinator/root_cause/unified_diff.h"
#include "re2/re2.h"

namespace kbisect {
namespace {

// ------------------------------------------------------------------------------------------------
// Languages and comments.
// ------------------------------------------------------------------------------------------------

enum class Lang {
  kDoc,     // Documentation: never analysed.
  kPython,  // '#' comments, docstrings.
  kC,       // C, C++, CUDA, HIP, OpenCL: '//' and '/* */' comments; '#' is the preprocessor.
  kMlir,    // MLIR / TTGIR / PTX: '//' comments; '#' starts attribute aliases.
  kLlvm,    // LLVM IR: ';' comments.
  kAsm,     // GPU assembly: ';' and '//' comments.
  kHash,    // Shell, YAML, TOML, CMake: '#' comments.
  kJson,    // No comments.
  kOther,   // Unknown: '//' comments and whole-line "# ..." comments.
};

struct LangInfo {
  Lang lang = Lang::kOther;
  bool cuda_like = false;  // .cu/.cuh/.hip: kernel code where `if (idx < n)` is a bounds check.
};

LangInfo LanguageOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string base =
      absl::AsciiStrToLower(slash == std::string::npos ? path : path.substr(slash + 1));
  const size_t dot = base.rfind('.');
  const std::string ext = dot == std::string::npos ? "" : base.substr(dot + 1);
  LangInfo info;
  if (base == "cmakelists.txt") {
    info.lang = Lang::kHash;
    return info;
  }
  for (const char* doc : {"readme", "license", "licence", "changelog", "changes", "authors",
                          "contributing", "notice", "copying", "codeowners", "history"}) {
    if (absl::StartsWith(base, doc)) {
      info.lang = Lang::kDoc;
      return info;
    }
  }
  static const auto* const kExt = new std::map<std::string, LangInfo>{
      {"md", {Lang::kDoc}},     {"markdown", {Lang::kDoc}}, {"rst", {Lang::kDoc}},
      {"txt", {Lang::kDoc}},    {"adoc", {Lang::kDoc}},     {"html", {Lang::kDoc}},
      {"htm", {Lang::kDoc}},    {"css", {Lang::kDoc}},      {"svg", {Lang::kDoc}},
      {"tex", {Lang::kDoc}},    {"org", {Lang::kDoc}},      {"ipynb", {Lang::kDoc}},
      {"py", {Lang::kPython}},  {"pyi", {Lang::kPython}},   {"pyx", {Lang::kPython}},
      {"c", {Lang::kC}},        {"cc", {Lang::kC}},         {"cpp", {Lang::kC}},
      {"cxx", {Lang::kC}},      {"h", {Lang::kC}},          {"hh", {Lang::kC}},
      {"hpp", {Lang::kC}},      {"hxx", {Lang::kC}},        {"inl", {Lang::kC}},
      {"ipp", {Lang::kC}},      {"cl", {Lang::kC}},         {"metal", {Lang::kC}},
      {"cu", {Lang::kC, true}}, {"cuh", {Lang::kC, true}},  {"hip", {Lang::kC, true}},
      {"mlir", {Lang::kMlir}},  {"ttgir", {Lang::kMlir}},   {"ttir", {Lang::kMlir}},
      {"ptx", {Lang::kMlir}},   {"ll", {Lang::kLlvm}},      {"llir", {Lang::kLlvm}},
      {"s", {Lang::kAsm}},      {"asm", {Lang::kAsm}},      {"amdgcn", {Lang::kAsm}},
      {"isa", {Lang::kAsm}},    {"sh", {Lang::kHash}},      {"bash", {Lang::kHash}},
      {"yaml", {Lang::kHash}},  {"yml", {Lang::kHash}},     {"toml", {Lang::kHash}},
      {"cfg", {Lang::kHash}},   {"ini", {Lang::kHash}},     {"cmake", {Lang::kHash}},
      {"json", {Lang::kJson}},
  };
  auto it = kExt->find(ext);
  if (it != kExt->end()) info = it->second;
  return info;
}

// Returns the code part of `line` (comments removed, right-trimmed). `in_block` carries a C
// block comment from one line to the next.
std::string StripComment(const std::string& line, Lang lang, bool* in_block) {
  std::string out;
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    const char next = i + 1 < line.size() ? line[i + 1] : '\0';
    if (*in_block) {
      if (c == '*' && next == '/') {
        *in_block = false;
        ++i;
        out.push_back(' ');
      }
      continue;
    }
    if (quote != 0) {
      out.push_back(c);
      if (c == '\\' && next != '\0') {
        out.push_back(next);
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '"' || (c == '\'' && lang != Lang::kAsm && lang != Lang::kLlvm)) {
      quote = c;
      out.push_back(c);
      continue;
    }
    const bool slash_slash = c == '/' && next == '/';
    switch (lang) {
      case Lang::kPython:
      case Lang::kHash:
        if (c == '#') return std::string(absl::StripTrailingAsciiWhitespace(out));
        break;
      case Lang::kC:
        if (slash_slash) return std::string(absl::StripTrailingAsciiWhitespace(out));
        if (c == '/' && next == '*') {
          *in_block = true;
          ++i;
          continue;
        }
        break;
      case Lang::kMlir:
      case Lang::kOther:
        if (slash_slash) return std::string(absl::StripTrailingAsciiWhitespace(out));
        break;
      case Lang::kLlvm:
        if (c == ';') return std::string(absl::StripTrailingAsciiWhitespace(out));
        break;
      case Lang::kAsm:
        if (c == ';' || slash_slash) return std::string(absl::StripTrailingAsciiWhitespace(out));
        break;
      case Lang::kJson:
      case Lang::kDoc:
        break;
    }
    out.push_back(c);
  }
  std::string code(absl::StripTrailingAsciiWhitespace(out));
  const absl::string_view trimmed = absl::StripLeadingAsciiWhitespace(code);
  if (lang == Lang::kC &&
      (trimmed == "*" || absl::StartsWith(trimmed, "* ") || absl::StartsWith(trimmed, "*/"))) {
    return "";  // The continuation of a block comment that began before the hunk.
  }
  if (lang == Lang::kOther && absl::StartsWith(trimmed, "#") &&
      (trimmed.size() == 1 || trimmed[1] == ' ' || trimmed[1] == '!')) {
    return "";
  }
  return code;
}

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

std::string RemoveWhitespace(absl::string_view s) {
  std::string out;
  for (char c : s) {
    if (!absl::ascii_isspace(static_cast<unsigned char>(c))) out.push_back(c);
  }
  return out;
}

std::string CollapseWhitespace(absl::string_view s) {
  std::string out;
  bool space = false;
  for (char c : absl::StripAsciiWhitespace(s)) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// The analysed form of a patch.
// ------------------------------------------------------------------------------------------------

struct Line {
  char kind = ' ';
  std::string raw;   // The text without its marker.
  std::string code;  // Without comments; empty for comment-only and blank lines.
  std::string norm;  // `code` without whitespace: equal norms are the same code.
  int indent = 0;
  // A removed line added verbatim elsewhere in the patch (or the reverse): not a real change.
  bool moved = false;
  int twin_file = -1;
  int twin_hunk = -1;
  int twin_line = -1;
};

struct Hunk {
  std::string header;
  std::vector<Line> lines;
};

struct File {
  std::string path;
  LangInfo lang;
  std::vector<Hunk> hunks;
};

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

// True when line `index` of `lines` sits inside a for/while loop visible in the hunk, on the new
// side (context and added lines) or the old side (context and removed lines): some loop header
// above it is indented less than it, with no function header in between.
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

// ------------------------------------------------------------------------------------------------
// Patterns.
// ------------------------------------------------------------------------------------------------

enum PatternId {
  kLoopBounds,
  kSync,
  kTileSizes,
  kMemoryOps,
  kDtype,
  kPrefetch,
  kWavesPerEu,
  kMasking,
  kLayout,
  kNumStages,
  kNumWarps,
  kPatternCount,
};

struct PatternInfo {
  const char* name;
  const char* cause;  // The seed's "Likely Cause".
};

const PatternInfo& InfoOf(int id) {
  static const PatternInfo kInfo[kPatternCount] = {
      {kPatternLoopBounds, "More iterations, more work"},
      {kPatternSynchronization, "Extra sync stalls"},
      {kPatternTileSizes, "Worse occupancy or more iterations"},
      {kPatternMemoryOps, "More memory traffic"},
      {kPatternDtype, "More memory bandwidth and register pressure"},
      {kPatternPrefetch, "Load latency exposed"},
      {kPatternWavesPerEu, "Reduced occupancy"},
      {kPatternMasking, "Extra ALU + potential branch divergence"},
      {kPatternLayout, "Possible bank conflicts or non-coalesced access"},
      {kPatternNumStages, "Triton pipelining change"},
      {kPatternNumWarps, "Different warps per program: changed occupancy and register pressure"},
  };
  return kInfo[id];
}

constexpr char kWeakMemoryCause[] =
    "Possibly more memory traffic, though not inside a loop in this hunk";

struct Match {
  int pattern = 0;
  int line = 0;      // Index into the hunk's lines.
  int strength = 1;  // The strongest match of a pattern in a hunk names the hint's line.
  std::string detail;
  std::string cause;  // Overrides the pattern's cause when not empty.
};

// A parameter read from one line: `key` identifies it ("BLOCK_SIZE"), `value` is how it reads.
struct Param {
  std::string key;
  std::string value;
};

using Extractor = std::function<std::vector<Param>(const Line&)>;

// Pairs parameters of removed lines with the same parameters of added lines in one hunk, in order,
// and calls `changed` for each pair whose values differ (ignoring whitespace). Moved lines are
// identical on both sides and take no part.
void PairChanges(
    const Hunk& hunk, const Extractor& extract,
    const std::function<void(int added_line, const std::string& key, const std::string& before,
                             const std::string& after)>& changed) {
  struct Entry {
    int line;
    Param param;
    bool used = false;
  };
  std::vector<Entry> removed, added;
  for (int i = 0; i < static_cast<int>(hunk.lines.size()); ++i) {
    const Line& line = hunk.lines[i];
    if (line.kind == ' ' || line.moved || line.code.empty()) continue;
    for (Param& param : extract(line)) {
      (line.kind == '-' ? removed : added).push_back({i, std::move(param)});
    }
  }
  for (Entry& before : removed) {
    for (Entry& after : added) {
      if (after.used || after.param.key != before.param.key) continue;
      after.used = true;
      if (RemoveWhitespace(after.param.value) != RemoveWhitespace(before.param.value)) {
        changed(after.line, before.param.key, before.param.value, after.param.value);
      }
      break;
    }
  }
}

// All matches of `re` (one capture group) in `text`.
std::vector<std::string> FindAll(const RE2& re, const std::string& text) {
  std::vector<std::string> out;
  re2::StringPiece input(text);
  std::string captured;
  while (RE2::FindAndConsume(&input, re, &captured)) out.push_back(captured);
  return out;
}

// All (key, value) matches of `re` (two capture groups) in `text`.
std::vector<Param> FindAllParams(const RE2& re, const std::string& text) {
  std::vector<Param> out;
  re2::StringPiece input(text);
  Param param;
  while (RE2::FindAndConsume(&input, re, &param.key, &param.value)) out.push_back(param);
  return out;
}

bool ParseInt(const std::string& s, int64_t* value) { return absl::SimpleAtoi(s, value); }

// --- Changed loop bounds. ---

// Splits a call's argument list at top-level commas and drops keyword arguments (num_stages=...),
// which are not bounds.
std::string PositionalArgs(const std::string& args) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (char c : args) {
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
      continue;
    }
    current.push_back(c);
  }
  parts.push_back(current);
  static const auto* const kKeyword = new RE2(R"(^\s*\w+\s*=[^=])");
  std::vector<std::string> positional;
  for (const std::string& part : parts) {
    if (!RE2::PartialMatch(part, *kKeyword)) positional.push_back(CollapseWhitespace(part));
  }
  return absl::StrJoin(positional, ", ");
}

std::vector<Param> LoopBounds(const Line& line) {
  static const auto* const kPythonFor = new RE2(
      R"(^\s*(?:async\s+)?for\s+(.+?)\s+in\s+((?:[\w]+\.)*(?:static_)?range)\s*\((.*)\)\s*:)");
  static const auto* const kCFor = new RE2(R"(\bfor\s*\(([^;]*);([^;]*);([^;]*)\))");
  static const auto* const kWhile =
      new RE2(R"(^\s*(?:\}\s*)?while\s*\(?\s*(\w+)\s*(<=|>=|<|>|!=)\s*(.+?)\s*\)?\s*[:{;]?\s*$)");
  static const auto* const kInitVar = new RE2(R"((\w+)\s*(?:=[^=]|=$))");
  static const auto* const kCondVar = new RE2(R"((\w+)\s*(?:<|>|!=))");
  std::vector<Param> out;
  std::string var, func, args, init, cond, step, op, bound;
  if (RE2::PartialMatch(line.code, *kPythonFor, &var, &func, &args)) {
    out.push_back(
        {"for " + RemoveWhitespace(var), absl::StrCat(func, "(", PositionalArgs(args), ")")});
  } else if (RE2::PartialMatch(line.code, *kCFor, &init, &cond, &step)) {
    if (!RE2::PartialMatch(init, *kInitVar, &var)) RE2::PartialMatch(cond, *kCondVar, &var);
    out.push_back({"for (" + var + ")",
                   absl::StrCat("for (", CollapseWhitespace(init), "; ", CollapseWhitespace(cond),
                                "; ", CollapseWhitespace(step), ")")});
  } else if (RE2::PartialMatch(line.code, *kWhile, &var, &op, &bound)) {
    out.push_back({"while " + var, absl::StrCat(var, " ", op, " ", CollapseWhitespace(bound))});
  }
  return out;
}

bool LooksDoubled(const std::string& before, const std::string& after) {
  static const auto* const kDouble = new RE2(R"(\*\s*2\b|\b2\s*\*|<<\s*1\b)");
  return RE2::PartialMatch(after, *kDouble) && !RE2::PartialMatch(before, *kDouble);
}

// --- Changed tile sizes. ---

std::vector<Param> TileSizes(const Line& line) {
  // BLOCK_SIZE = 64, BLOCK_M=128 (keyword), 'BLOCK_N': 64 (config dict), block_size: int = 64,
  // constexpr int kBlockM = 128, TILE_K = 32.
  static const auto* const kAssign = new RE2(
      R"(\b((?:BLOCK|TILE)(?:_[A-Z0-9]+)*)"
      R"(|(?:block|tile)_(?:size|m|n|k|dim|rows|cols)(?:_[a-z0-9]+)*)"
      R"(|k(?:Block|Tile)[A-Za-z0-9]*)"
      // A quote (dict key), an optional annotation (": tl.constexpr"), "=" or ":", a number.
      R"()\b['"]?\s*(?:(?::\s*[A-Za-z_][\w.\[\]]*\s*)?=|:)\s*(\d+)\b)");
  static const auto* const kDefine = new RE2(
      R"(#\s*define\s+((?:BLOCK|TILE)(?:_[A-Z0-9]+)*|(?:block|tile)_\w+|k(?:Block|Tile)\w*))"
      R"(\s+\(?\s*(\d+))");
  static const auto* const kLaunch =
      new RE2(R"(<<<\s*([^,<>]+?)\s*,\s*([^,<>]+?)\s*(?:,[^<>]*)?>>>)");
  static const auto* const kDim3 =
      new RE2(R"(\bdim3\s+(\w*(?:[Bb]lock|[Tt]hread)\w*)\s*[({]([^)}]*)[)}])");
  std::vector<Param> out = FindAllParams(*kAssign, line.code);
  for (Param& param : FindAllParams(*kDefine, line.code)) out.push_back(std::move(param));
  std::string grid, block;
  if (RE2::PartialMatch(line.code, *kLaunch, &grid, &block)) {
    out.push_back({"threads per block (<<<...>>>)", block});
  }
  for (Param& param : FindAllParams(*kDim3, line.code)) {
    param.key = "dim3 " + param.key;
    param.value = CollapseWhitespace(param.value);
    out.push_back(std::move(param));
  }
  return out;
}

// --- Single integer parameters: waves_per_eu, num_stages, num_warps, num_buffers. ---

std::vector<Param> IntParam(const Line& line, const RE2& re, const std::string& key) {
  std::vector<Param> out;
  for (std::string& value : FindAll(re, line.code)) out.push_back({key, std::move(value)});
  return out;
}

std::vector<Param> WavesPerEu(const Line& line) {
  static const auto* const kRe = new RE2(
      R"((?:\bwaves_per_eu\b['"]?\s*[=:]|amdgpu_waves_per_eu\s*\(|"amdgpu-waves-per-eu"\s*=\s*"))"
      R"(\s*(\d+))");
  return IntParam(line, *kRe, "waves_per_eu");
}

std::vector<Param> NumStages(const Line& line) {
  static const auto* const kRe = new RE2(R"(\bnum[_-]stages\b['"]?\s*[=:]\s*(\d+))");
  return IntParam(line, *kRe, "num_stages");
}

std::vector<Param> NumWarps(const Line& line) {
  static const auto* const kRe = new RE2(R"(\bnum[_-]warps\b['"]?\s*[=:]\s*(\d+))");
  return IntParam(line, *kRe, "num_warps");
}

std::vector<Param> NumBuffers(const Line& line) {
  static const auto* const kRe = new RE2(R"(\bnum_buffers\b['"]?\s*[=:]\s*(\d+))");
  return IntParam(line, *kRe, "num_buffers");
}

// --- Refactored layout. ---

std::vector<Param> LayoutParams(const Line& line) {
  static const auto* const kKeyword = new RE2(
      R"(\b(size_per_thread|threads_per_warp|warps_per_cta|ctas_per_cga|cta_split_num|cta_order)"
      R"(|sizePerThread|threadsPerWarp|warpsPerCTA|CTAsPerCGA|CTASplitNum|CTAOrder|order)"
      R"(|instr_shape|instrShape|vec|per_phase|perPhase|max_phase|maxPhase))"
      R"(\s*[=:]\s*(\[[^\]]*\]|\d+))");
  static const auto* const kContext =
      new RE2(R"(Layout|#ttg\.|#triton_gpu\.|blocked<|size_per_thread|sizePerThread|shared<)");
  static const auto* const kCall = new RE2(R"(\b(\w*Layout)\s*\(((?:[^()]|\([^()]*\))*)\))");
  if (!RE2::PartialMatch(line.code, *kContext)) {
    // Keyword lines of a multi-line layout constructor still count, except generic ones.
    std::vector<Param> out;
    for (Param& param : FindAllParams(*kKeyword, line.code)) {
      if (param.key == "order" || param.key == "vec" || param.key == "per_phase" ||
          param.key == "perPhase" || param.key == "max_phase" || param.key == "maxPhase") {
        continue;
      }
      out.push_back(std::move(param));
    }
    return out;
  }
  std::vector<Param> out = FindAllParams(*kKeyword, line.code);
  if (out.empty()) {
    for (Param& param : FindAllParams(*kCall, line.code)) {
      param.value = CollapseWhitespace(param.value);
      out.push_back(std::move(param));
    }
  }
  return out;
}

// --- Changed dtype. ---

// Names of floating-point types, as an RE2 alternation (no groups).
constexpr char kDtypeNames[] =
    R"(float8\w*|fp8\w*|f8E\w+|float16|fp16|f16|half2?|__half2?|bfloat16|bf16|__nv_bfloat16)"
    R"(|__hip_bfloat16|nv_bfloat16|float32|fp32|f32|tf32|float|float64|fp64|f64|double)";

struct DtypeToken {
  std::string name;
  int bits;
};

std::vector<DtypeToken> DtypeTokens(const std::string& code) {
  static const auto* const kRe = new RE2(absl::StrCat(R"(\b()", kDtypeNames, R"()\b)"));
  std::vector<DtypeToken> out;
  for (std::string& name : FindAll(*kRe, code)) {
    const std::string lower = absl::AsciiStrToLower(name);
    int bits = 32;
    if (absl::StrContains(lower, "8")) {
      bits = absl::StrContains(lower, "64") ? 64 : 8;
    } else if (absl::StrContains(lower, "16") || absl::StrContains(lower, "half")) {
      bits = 16;
    } else if (absl::StrContains(lower, "64") || lower == "double") {
      bits = 64;
    }
    out.push_back({std::move(name), bits});
  }
  return out;
}

// `code` with every dtype name replaced by "DT", without whitespace.
std::string MaskDtypes(const std::string& code) {
  static const auto* const kRe = new RE2(absl::StrCat(R"(\b(?:)", kDtypeNames, R"()\b)"));
  std::string out = code;
  RE2::GlobalReplace(&out, *kRe, "DT");
  return RemoveWhitespace(out);
}

std::string AssignedName(const std::string& code) {
  static const auto* const kLhs =
      new RE2(R"(^\s*(?:[\w:<>*&]+\s+)*?([\w.\[\]]+)\s*(?::[^=]+)?=[^=])");
  std::string name;
  RE2::PartialMatch(code, *kLhs, &name);
  return name;
}

void FindDtypeChanges(const Hunk& hunk, std::vector<Match>* matches) {
  std::vector<int> removed, added;
  for (int i = 0; i < static_cast<int>(hunk.lines.size()); ++i) {
    const Line& line = hunk.lines[i];
    if (line.kind == ' ' || line.moved || line.code.empty()) continue;
    (line.kind == '-' ? removed : added).push_back(i);
  }
  std::set<int> used;
  for (int r : removed) {
    const std::vector<DtypeToken> before = DtypeTokens(hunk.lines[r].code);
    if (before.empty()) continue;
    const std::string masked = MaskDtypes(hunk.lines[r].code);
    const std::string lhs = AssignedName(hunk.lines[r].code);
    for (int a : added) {
      if (used.count(a) > 0) continue;
      const std::vector<DtypeToken> after = DtypeTokens(hunk.lines[a].code);
      if (after.empty()) continue;
      const bool same_shape = MaskDtypes(hunk.lines[a].code) == masked;
      const bool same_target =
          !lhs.empty() && AssignedName(hunk.lines[a].code) == lhs && after.size() == before.size();
      if (!same_shape && !same_target) continue;
      used.insert(a);
      // The first position (or, with unequal counts, the widest type) that got wider.
      const DtypeToken* from = nullptr;
      const DtypeToken* to = nullptr;
      if (after.size() == before.size()) {
        for (size_t k = 0; k < after.size(); ++k) {
          if (after[k].bits > before[k].bits) {
            from = &before[k];
            to = &after[k];
            break;
          }
        }
      }
      if (from != nullptr) {
        const int ratio = to->bits / from->bits;
        Match match;
        match.pattern = kDtype;
        match.line = a;
        match.detail = absl::StrCat(from->name, " -> ", to->name);
        match.cause = absl::StrFormat("%dx memory bandwidth, %dx register pressure", ratio, ratio);
        matches->push_back(std::move(match));
      }
      break;
    }
  }
}

// --- Added synchronization, memory ops and masking; removed prefetch. ---

std::vector<std::string> SyncOps(const Line& line, const LangInfo&) {
  static const auto* const kRe = new RE2(
      R"(((?:\b|_)s_barrier\b|\b(?:tl|gl|ttgl)\.debug_barrier\b|\bgl\.barrier\b)"
      R"(|\b__syncthreads(?:_count|_and|_or)?\b|\b__syncwarp\b)"
      R"(|\b__threadfence(?:_block|_system)?\b)"
      R"(|\btorch\.cuda\.synchronize\b|\b(?:cuda|hip)(?:Device|Stream|Event)Synchronize\b)"
      R"(|\bbar\.sync\b|\bbarrier\.sync(?:\.aligned)?\b|\bgpu\.barrier\b|\bttg\.barrier\b)"
      R"(|\bcuda::barrier\b|\b(?:block|grid|tile|warp|cta|cluster)\.sync\s*\(|\bcg::sync\b))");
  std::vector<std::string> out;
  for (std::string& op : FindAll(*kRe, line.code)) {
    std::string kind(absl::StripSuffix(RemoveWhitespace(op), "("));
    if (absl::StartsWith(kind, "_s_barrier")) kind = "s_barrier";
    out.push_back(std::move(kind));
  }
  return out;
}

std::vector<std::string> MemoryOps(const Line& line, const LangInfo& lang) {
  static const auto* const kCall =
      new RE2(R"(\b((?:tl|gl|ttgl|triton\.language)\.(?:load|store|atomic_[a-z]+))"
              R"(|\w*desc\w*\.(?:load|store)|__ld(?:g|cg|ca|cs|lu|cv)|__st(?:wb|cg|cs|wt))\s*\()");
  static const auto* const kInstruction = new RE2(
      R"(\b((?:buffer|global|flat)_(?:load|store)_\w+|ld\.global\w*|st\.global\w*|tt\.load)"
      R"(|tt\.store|ttg\.local_load|ttg\.local_store|amdgpu\.buffer_load|amdgpu\.buffer_store)\b)");
  std::vector<std::string> out = FindAll(*kCall, line.code);
  if (lang.lang == Lang::kAsm || lang.lang == Lang::kMlir || lang.lang == Lang::kLlvm) {
    for (std::string& op : FindAll(*kInstruction, line.code)) out.push_back(std::move(op));
  }
  return out;
}

std::vector<std::string> MaskingOps(const Line& line, const LangInfo& lang) {
  static const auto* const kWhere = new RE2(R"(\b((?:tl|gl|ttgl|torch)\.where)\s*\()");
  static const auto* const kMask = new RE2(R"(\b(\w*mask)\s*=(?:[^=]|$))");
  static const auto* const kBoundary = new RE2(R"(\b(boundary_check|padding_option)\s*=)");
  static const auto* const kIfBound = new RE2(
      R"(^\s*(?:\}\s*)?(?:else\s+)?if\s*\()"
      R"(.*\b(?:threadIdx|blockIdx|blockDim|tid|idx|row|col|gid|lane|offset|i|j)\b.*(?:<|>=))");
  std::vector<std::string> out;
  for (std::string& op : FindAll(*kWhere, line.code)) out.push_back(std::move(op));
  if (lang.lang == Lang::kPython) {
    for (size_t k = FindAll(*kMask, line.code).size(); k > 0; --k) out.push_back("mask=");
  }
  for (std::string& op : FindAll(*kBoundary, line.code)) out.push_back(op + "=");
  if (lang.cuda_like && RE2::PartialMatch(line.code, *kIfBound)) out.push_back("boundary check");
  return out;
}

std::vector<std::string> PrefetchOps(const Line& line, const LangInfo&) {
  static const auto* const kRe = new RE2(
      R"((?i)(prefetch|double[_ -]?buffer|num_buffers|cp\.async|cp_async|memcpy_async|async_copy)"
      R"(|__pipeline_|pipeline_commit|pipeline_wait|commit_group|wait_group))");
  std::vector<std::string> out;
  for (std::string& op : FindAll(*kRe, line.code)) {
    std::string kind = absl::AsciiStrToLower(op);
    if (absl::StartsWith(kind, "double")) kind = "double buffer";
    if (kind == "cp_async") kind = "cp.async";
    out.push_back(std::move(kind));
  }
  return out;
}

using OpFinder = std::function<std::vector<std::string>(const Line&, const LangInfo&)>;

// Reports operations of `find` that appear on added lines (`added_side`) or removed lines
// (otherwise) with no counterpart of the same kind on the other side of the hunk. A counterpart
// with the same assigned name is preferred, so that `x = tl.load(p)` -> `x = tl.load(p, mask=m)`
// is a modified load, not a new one. When `moves_into_loops` is set, a line that moved into a
// loop (its twin was not in one) is reported too.
void FindUnmatchedOps(
    const std::vector<File>& files, const File& file, const Hunk& hunk, const OpFinder& find,
    bool added_side, bool moves_into_loops,
    const std::function<void(int line, const std::string& kind, bool moved)>& report) {
  const char mine = added_side ? '+' : '-';
  const char theirs = added_side ? '-' : '+';
  struct Candidate {
    int line;
    std::string kind;
    std::string lhs;
    bool used = false;
  };
  std::vector<Candidate> own, other;
  for (int i = 0; i < static_cast<int>(hunk.lines.size()); ++i) {
    const Line& line = hunk.lines[i];
    if (line.code.empty()) continue;
    if (line.kind == mine && line.moved) {
      if (!moves_into_loops || line.twin_file < 0) continue;
      const Hunk& twin_hunk = files[line.twin_file].hunks[line.twin_hunk];
      if (!InsideLoop(hunk.lines, i, added_side) ||
          InsideLoop(twin_hunk.lines, line.twin_line, !added_side)) {
        continue;
      }
      for (const std::string& kind : find(line, file.lang)) report(i, kind, true);
      continue;
    }
    if (line.moved || (line.kind != mine && line.kind != theirs)) continue;
    for (std::string& kind : find(line, file.lang)) {
      (line.kind == mine ? own : other).push_back({i, std::move(kind), AssignedName(line.code)});
    }
  }
  // First pass: same kind and same assigned name; second pass: same kind.
  for (int pass = 0; pass < 2; ++pass) {
    for (Candidate& mine_op : own) {
      if (mine_op.used) continue;
      for (Candidate& their_op : other) {
        if (their_op.used || their_op.kind != mine_op.kind) continue;
        if (pass == 0 && (mine_op.lhs.empty() || mine_op.lhs != their_op.lhs)) continue;
        their_op.used = mine_op.used = true;
        break;
      }
    }
  }
  for (const Candidate& op : own) {
    if (!op.used) report(op.line, op.kind, false);
  }
}

void FindHunkMatches(const std::vector<File>& files, const File& file, const Hunk& hunk,
                     std::vector<Match>* matches) {
  auto add = [&](int pattern, int line, std::string detail, std::string cause = "",
                 int strength = 1) {
    Match match;
    match.pattern = pattern;
    match.line = line;
    match.detail = std::move(detail);
    match.cause = std::move(cause);
    match.strength = strength;
    matches->push_back(std::move(match));
  };

  PairChanges(
      hunk, LoopBounds,
      [&](int line, const std::string&, const std::string& before, const std::string& after) {
        add(kLoopBounds, line, absl::StrCat(before, " -> ", after),
            LooksDoubled(before, after) ? "More iterations, doubled work" : "");
      });

  FindUnmatchedOps(
      files, file, hunk, SyncOps, /*added_side=*/true, /*moves_into_loops=*/true,
      [&](int line, const std::string& kind, bool moved) {
        add(kSync, line,
            moved ? absl::StrCat(kind, " moved into a loop") : absl::StrCat("new ", kind));
      });

  PairChanges(
      hunk, TileSizes,
      [&](int line, const std::string& key, const std::string& before, const std::string& after) {
        add(kTileSizes, line, absl::StrCat(key, ": ", before, " -> ", after));
      });

  FindUnmatchedOps(files, file, hunk, MemoryOps, /*added_side=*/true, /*moves_into_loops=*/true,
                   [&](int line, const std::string& kind, bool moved) {
                     if (moved) {
                       add(kMemoryOps, line, absl::StrCat(kind, " moved into a loop"), "", 2);
                     } else if (InsideLoop(hunk.lines, line, /*new_side=*/true)) {
                       add(kMemoryOps, line, absl::StrCat("new ", kind, " inside a loop"), "", 2);
                     } else {
                       add(kMemoryOps, line, absl::StrCat("new ", kind), kWeakMemoryCause, 1);
                     }
                   });

  FindDtypeChanges(hunk, matches);

  FindUnmatchedOps(files, file, hunk, PrefetchOps, /*added_side=*/false,
                   /*moves_into_loops=*/false, [&](int line, const std::string& kind, bool) {
                     add(kPrefetch, line, absl::StrCat("deleted ", kind));
                   });
  PairChanges(
      hunk, NumBuffers,
      [&](int line, const std::string& key, const std::string& before, const std::string& after) {
        int64_t b = 0, a = 0;
        if (ParseInt(before, &b) && ParseInt(after, &a) && a < b) {
          add(kPrefetch, line, absl::StrCat(key, ": ", before, " -> ", after), "", 2);
        }
      });

  PairChanges(
      hunk, WavesPerEu,
      [&](int line, const std::string& key, const std::string& before, const std::string& after) {
        int64_t b = 0, a = 0;
        const bool increased = ParseInt(before, &b) && ParseInt(after, &a) && a > b;
        add(kWavesPerEu, line, absl::StrCat(key, ": ", before, " -> ", after),
            increased ? "Changed occupancy target: more waves per EU leave fewer "
                        "registers per wave (possible spills)"
                      : "");
      });

  FindUnmatchedOps(files, file, hunk, MaskingOps, /*added_side=*/true,
                   /*moves_into_loops=*/false, [&](int line, const std::string& kind, bool) {
                     add(kMasking, line, absl::StrCat("new ", kind));
                   });

  PairChanges(
      hunk, LayoutParams,
      [&](int line, const std::string& key, const std::string& before, const std::string& after) {
        add(kLayout, line, absl::StrCat(key, ": ", before, " -> ", after));
      });

  PairChanges(
      hunk, NumStages,
      [&](int line, const std::string& key, const std::string& before, const std::string& after) {
        add(kNumStages, line, absl::StrCat(key, ": ", before, " -> ", after));
      });
  PairChanges(
      hunk, NumWarps,
      [&](int line, const std::string& key, const std::string& before, const std::string& after) {
        add(kNumWarps, line, absl::StrCat(key, ": ", before, " -> ", after));
      });
}

// Folds the matches of one hunk into at most one hint per pattern, in line order.
std::vector<v1::RootCauseHint> HintsForHunk(const File& file, const Hunk& hunk,
                                            std::vector<Match> matches) {
  struct Group {
    int pattern;
    const Match* best = nullptr;
    std::vector<std::string> details;
  };
  std::vector<Group> groups;
  std::stable_sort(matches.begin(), matches.end(),
                   [](const Match& a, const Match& b) { return a.line < b.line; });
  for (const Match& match : matches) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& g) { return g.pattern == match.pattern; });
    if (it == groups.end()) {
      groups.push_back({match.pattern, &match, {}});
      it = groups.end() - 1;
    } else if (match.strength > it->best->strength) {
      it->best = &match;
    }
    if (!match.detail.empty() &&
        std::find(it->details.begin(), it->details.end(), match.detail) == it->details.end()) {
      it->details.push_back(match.detail);
    }
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    if (a.best->line != b.best->line) return a.best->line < b.best->line;
    return a.pattern < b.pattern;
  });
  std::vector<v1::RootCauseHint> hints;
  for (Group& group : groups) {
    const Match& best = *group.best;
    const Line& line = hunk.lines[best.line];
    // The strongest match's detail leads.
    auto lead = std::find(group.details.begin(), group.details.end(), best.detail);
    if (lead != group.details.end()) std::rotate(group.details.begin(), lead, lead + 1);
    constexpr size_t kMaxDetails = 3;
    std::string details;
    if (group.details.size() > kMaxDetails) {
      details = absl::StrCat(
          absl::StrJoin(group.details.begin(), group.details.begin() + kMaxDetails, ", "), ", and ",
          group.details.size() - kMaxDetails, " more");
    } else {
      details = absl::StrJoin(group.details, ", ");
    }
    v1::RootCauseHint hint;
    hint.set_pattern(InfoOf(group.pattern).name);
    const std::string cause = best.cause.empty() ? InfoOf(group.pattern).cause : best.cause;
    hint.set_likely_cause(details.empty() ? cause : absl::StrCat(cause, " (", details, ")"));
    hint.set_file(file.path);
    hint.set_hunk_header(hunk.header);
    hint.set_line(absl::StrCat(std::string(1, line.kind), absl::StripAsciiWhitespace(line.raw)));
    hints.push_back(std::move(hint));
  }
  return hints;
}

// Rank of a hint for the hypothesis: lower is a more specific, more likely explanation.
int Rank(const v1::RootCauseHint& hint) {
  static const char* const kOrder[] = {
      kPatternLoopBounds, kPatternTileSizes,  kPatternDtype,    kPatternNumStages,
      kPatternNumWarps,   kPatternWavesPerEu, kPatternPrefetch, kPatternSynchronization,
      kPatternMemoryOps,  kPatternLayout,     kPatternMasking,
  };
  constexpr int kCount = sizeof(kOrder) / sizeof(kOrder[0]);
  for (int i = 0; i < kCount; ++i) {
    if (hint.pattern() != kOrder[i]) continue;
    if (hint.pattern() == kPatternMemoryOps && absl::StartsWith(hint.likely_cause(), "Possibly")) {
      return kCount;  // A load outside any visible loop ranks last.
    }
    return i;
  }
  return kCount + 1;
}

std::string LowerFirst(std::string s) {
  if (!s.empty()) s[0] = absl::ascii_tolower(static_cast<unsigned char>(s[0]));
  return s;
}

}  // namespace

std::vector<v1::RootCauseHint> FindRootCauseHints(std::string_view unified_patch,
                                                  size_t max_hints) {
  std::vector<v1::RootCauseHint> hints;
  if (max_hints == 0) return hints;
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
  for (const File& file : files) {
    for (const Hunk& hunk : file.hunks) {
      std::vector<Match> matches;
      FindHunkMatches(files, file, hunk, &matches);
      for (v1::RootCauseHint& hint : HintsForHunk(file, hunk, std::move(matches))) {
        hints.push_back(std::move(hint));
        if (hints.size() >= max_hints) return hints;
      }
    }
  }
  return hints;
}

std::string SummarizeHypothesis(const std::vector<v1::RootCauseHint>& hints) {
  if (hints.empty()) return "No known pattern matched; read the culprit's diff.";
  size_t best = 0;
  for (size_t i = 1; i < hints.size(); ++i) {
    if (Rank(hints[i]) < Rank(hints[best])) best = i;
  }
  const v1::RootCauseHint& lead = hints[best];
  std::string out = absl::StrCat("Likely cause: ", LowerFirst(lead.likely_cause()), ", from ",
                                 LowerFirst(lead.pattern()), " in ", lead.file(), ".");
  std::vector<std::string> others;
  std::set<std::string> seen = {lead.pattern() + "\n" + lead.file()};
  for (const v1::RootCauseHint& hint : hints) {
    if (!seen.insert(hint.pattern() + "\n" + hint.file()).second) continue;
    others.push_back(absl::StrCat(LowerFirst(hint.pattern()), " in ", hint.file()));
  }
  constexpr size_t kMaxOthers = 3;
  if (!others.empty()) {
    const size_t shown = std::min(others.size(), kMaxOthers);
    absl::StrAppend(
        &out, " Other suspects: ", absl::StrJoin(others.begin(), others.begin() + shown, ", "));
    if (others.size() > shown) absl::StrAppend(&out, ", and ", others.size() - shown, " more");
    absl::StrAppend(&out, ".");
  }
  return out;
}

}  // namespace kbisect
