// Copyright 2026 The kbisect Authors.
//
// Length-prefixed strings in one blob (4 bytes big-endian length, then the bytes): how the job
// store keeps a list (commits, results, events, a TakeTasks' workers) in one column.
#ifndef KBISECT_COMMON_TEXT_CHUNKS_H_
#define KBISECT_COMMON_TEXT_CHUNKS_H_

#include <string>
#include <vector>

namespace kbisect {

// Appends `chunk` to `out`, length first.
void AppendChunk(const std::string& chunk, std::string* out);

// Appends the chunks of `blob` to `chunks`; false when the blob is cut short.
bool SplitChunks(const std::string& blob, std::vector<std::string>* chunks);

}  // namespace kbisect

#endif  // KBISECT_COMMON_TEXT_CHUNKS_H_
