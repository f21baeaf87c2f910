// Copyright 2026 The kbisect Authors.
#include "report/html/job_list_page.h"

#include "absl/strings/str_cat.h"
#include "common/rpc/enum_label.h"
#include "common/rpc/proto_time.h"
#include "common/status_macros.h"
#include "common/text/count.h"
#include "report/html/job_page.h"
#include "report/html/page_format.h"
#include "report/html/template.h"

namespace kbisect::html {

absl::StatusOr<std::string> RenderJobListPage(const v1::ListJobsResponse& jobs, absl::Time now,
                                              int refresh_seconds) {
  ASSIGN_OR_RETURN(std::string head, PageHead("kbisect jobs", refresh_seconds));
  std::string rows;
  for (const v1::JobSummary& j : jobs.jobs()) {
    const absl::Duration age = now - FromProto(j.create_time());
    absl::StrAppend(&rows, "<tr class=\"job\"><td class=\"mono\"><a href=\"/jobs/",
                    Escape(j.job_id()), "\">", Escape(j.job_id()), "</a></td><td>",
                    Escape(EnumLabel(j.state())), "</td><td class=\"outcome-",
                    Escape(EnumLabel(j.status())), "\">", Escape(EnumLabel(j.status())),
                    "</td><td class=\"mono\">", Escape(ShortSha(j.culprit_sha())), "</td><td>",
                    Escape(j.good()), "..", Escape(j.bad()), "</td><td>", Escape(j.repository()),
                    "</td><td class=\"num\">",
                    j.has_create_time() ? Escape(Seconds(absl::ToDoubleSeconds(age))) + " ago" : "",
                    "</td></tr>");
  }
  ASSIGN_OR_RETURN(
      std::string body,
      Fill(
          R"html(<h1>kbisect jobs</h1><p class="muted">{{count}}</p><table class="jobs"><tr><th>job</th><th>state</th><th>outcome</th><th>culprit</th><th>range</th><th>repository</th><th>created</th></tr>{{{rows}}}</table>
)html",
          {{"count", absl::StrCat(Count(jobs.jobs_size(), "job"), ", newest first")},
           {"rows", rows}}));
  return absl::StrCat(head, body, PageEnd(now));
}

}  // namespace kbisect::html
