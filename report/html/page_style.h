// Copyright 2026 The kbisect Authors.
//
// The style sheet and the script inlined into every kbisect HTML page (no network fetches):
// light and dark colour schemes (prefers-color-scheme), a print layout, and a script that
// links a sample or a timeline bar to its row in the probes table on hover.
#ifndef KBISECT_REPORT_HTML_PAGE_STYLE_H_
#define KBISECT_REPORT_HTML_PAGE_STYLE_H_

#include "absl/strings/string_view.h"

namespace kbisect::html {

absl::string_view PageCss();
absl::string_view PageScript();

}  // namespace kbisect::html

#endif  // KBISECT_REPORT_HTML_PAGE_STYLE_H_
