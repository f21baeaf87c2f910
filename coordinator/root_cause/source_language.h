// Copyright 2026 The kbisect Authors.
//
// Source-language detection for root-cause hints: which language a changed file is written in,
// judged by its name, and how that language's comments are stripped from a line of it.
//
// Internal to kbisect_root_cause: callers use root_cause.h.
#ifndef KBISECT_COORDINATOR_ROOT_CAUSE_SOURCE_LANGUAGE_H_
#define KBISECT_COORDINATOR_ROOT_CAUSE_SOURCE_LANGUAGE_H_

#include <string>

namespace kbisect {
namespace root_cause_internal {

// The languages whose comments are told apart.
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

// What the detectors need to know about a file's language.
struct LangInfo {
  Lang lang = Lang::kOther;
  bool cuda_like = false;  // .cu/.cuh/.hip: kernel code where `if (idx < n)` is a bounds check.
};

// Returns the language of the file at `path`, from its base name: documentation names (README,
// LICENSE, CHANGELOG, ...) and extensions (.md, .txt, ...) are Lang::kDoc, CMakeLists.txt is
// Lang::kHash, and a known extension decides otherwise. Unknown names are Lang::kOther.
LangInfo LanguageOf(const std::string& path);

// Returns the code part of `line` written in `lang`: comments removed (string literals are
// respected) and trailing whitespace trimmed, so a comment-only line gives "". `in_block` carries
// an open C block comment from one line of a hunk to the next; it must start false.
std::string StripComment(const std::string& line, Lang lang, bool* in_block);

}  // namespace root_cause_internal
}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_ROOT_CAUSE_SOURCE_LANGUAGE_H_
