// Copyright 2026 The kbisect Authors.
//
// The words for a job's facts that every surface shares: the terminal report and progress lines,
// the job pages, the Markdown summary and the coordinator's own event text. One namer per fact:
// a verdict is named here and nowhere else. Pure, and depends on the wire types only, so that
// the CLI and the pages need nothing from coordinator/job to speak of a job.
#ifndef KBISECT_REPORT_WORDS_H_
#define KBISECT_REPORT_WORDS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// A commit as people read it: its first 7 hex digits.
std::string ShortSha(absl::string_view sha);

// How a word is set: "good" in sentences and tables, "GOOD" in progress lines and the report.
enum class WordCase { kLower, kUpper };

// The verdict's word: "good", "bad", "skip", "ambiguous", ...; "pending" while unclassified
// (VERDICT_UNSPECIFIED). Upper case with WordCase::kUpper ("GOOD", "PENDING").
std::string VerdictWord(v1::Verdict verdict, WordCase word_case = WordCase::kLower);

// A probe's verdict as a table shows it: its state ("running", "cancelled", "pending") before
// its task finished; "measured" for baselines, controls and the confirmation; "not needed" for a
// finished bisect probe the interval left before it was judged; else VerdictWord.
std::string ProbeVerdictWord(const v1::Probe& probe);

// The user's marks, appended to the STARTED event and the header: "Marked by you (not measured):
// 1a2b3c4 good, 5d6e7f8 skip; 12 commits left to search".
std::string MarksText(const google::protobuf::RepeatedPtrField<v1::CommitMark>& marks,
                      int commits_left);

// What a job calls its culprit: "Fixed by" for --find-fix, else "Regression introduced by".
std::string CulpritHeading(const v1::JobSpec& spec);

// A try job's answer (JobSpec.try_change), from its confirmation: "time 12.0% lower with the
// change, better (x0.88, 95% CI 0.86 to 0.9, 12 interleaved pairs): significant", or "no
// significant difference: x1.003 (95% CI 0.99 to 1.02, 12 interleaved pairs)"; "not measured"
// before the pairs are judged.
std::string TryResultWords(const v1::JobStatus& job);

}  // namespace kbisect

#endif  // KBISECT_REPORT_WORDS_H_
