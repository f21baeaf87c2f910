// Copyright 2026 The kbisect Authors.
//
// The small template helper behind the HTML pages (docs/decisions.md, 50). A template is a
// string constant with placeholders:
//
//   {{name}}    replaced by the value of `name`, HTML-escaped (text and attribute values);
//   {{{name}}}  replaced by the value as it is: markup that another template already rendered.
//
//   Fill("<td class=\"{{cls}}\">{{text}}</td>", {{"cls", "bad"}, {"text", "a < b"}})
//     == "<td class=\"bad\">a &lt; b</td>"
//
// Every placeholder needs a value and every value must be used, so a renamed field fails the
// render (and the tests) instead of printing nothing.
#ifndef KBISECT_REPORT_HTML_TEMPLATE_H_
#define KBISECT_REPORT_HTML_TEMPLATE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kbisect::html {

using Fields = std::vector<std::pair<absl::string_view, std::string>>;

// Escapes &, <, >, " and ' for text and double- or single-quoted attribute values.
std::string Escape(absl::string_view text);

// Fills `tmpl` as described above. InvalidArgument names an unknown placeholder, an unused
// value or an unclosed "{{".
absl::StatusOr<std::string> Fill(absl::string_view tmpl, const Fields& fields);

}  // namespace kbisect::html

#endif  // KBISECT_REPORT_HTML_TEMPLATE_H_
