// Copyright 2026 The kbisect Authors.
//
// The one quoting of a word for /bin/sh that kbisect writes into commands it prints or runs:
// a word of safe characters as it is, anything else single-quoted (a ' inside as '\'').
//
//   ShellQuote("make")          == "make"
//   ShellQuote("it's a test")   == "'it'\''s a test'"
#ifndef KBISECT_COMMON_TEXT_SHELL_QUOTE_H_
#define KBISECT_COMMON_TEXT_SHELL_QUOTE_H_

#include <string>

namespace kbisect {

// Returns `word` as /bin/sh reads it back as one word: unchanged when non-empty and made only of
// letters, digits and @%_-+=:,./; else in single quotes.
std::string ShellQuote(const std::string& word);

}  // namespace kbisect

#endif  // KBISECT_COMMON_TEXT_SHELL_QUOTE_H_
