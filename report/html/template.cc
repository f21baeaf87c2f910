// Copyright 2026 The kbisect Authors.
#include "report/html/template.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace kbisect::html {

std::string Escape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

absl::StatusOr<std::string> Fill(absl::string_view tmpl, const Fields& fields) {
  std::vector<bool> used(fields.size(), false);
  std::string out;
  out.reserve(tmpl.size() * 2);
  size_t pos = 0;
  while (pos < tmpl.size()) {
    const size_t open = tmpl.find("{{", pos);
    if (open == absl::string_view::npos) {
      absl::StrAppend(&out, tmpl.substr(pos));
      break;
    }
    absl::StrAppend(&out, tmpl.substr(pos, open - pos));
    const bool raw = tmpl.substr(open, 3) == "{{{";
    const size_t name_start = open + (raw ? 3 : 2);
    const absl::string_view closing = raw ? "}}}" : "}}";
    const size_t close = tmpl.find(closing, name_start);
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("unclosed placeholder at offset ", open, " of a template"));
    }
    const absl::string_view name = tmpl.substr(name_start, close - name_start);
    size_t i = 0;
    while (i < fields.size() && fields[i].first != name) ++i;
    if (i == fields.size()) {
      return absl::InvalidArgumentError(absl::StrCat("no value for placeholder {{", name, "}}"));
    }
    used[i] = true;
    absl::StrAppend(&out, raw ? fields[i].second : Escape(fields[i].second));
    pos = close + closing.size();
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!used[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("value ", fields[i].first, " is not used by the template"));
    }
  }
  return out;
}

}  // namespace kbisect::html
