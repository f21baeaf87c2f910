// Copyright 2026 The kbisect Authors.
#include "coordinator/root_cause/source_language.h"

#include <map>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace kbisect {
namespace root_cause_internal {

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

}  // namespace root_cause_internal
}  // namespace kbisect
