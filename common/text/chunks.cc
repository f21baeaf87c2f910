// Copyright 2026 The kbisect Authors.
#include "common/text/chunks.h"

#include <cstdint>

namespace kbisect {

void AppendChunk(const std::string& chunk, std::string* out) {
  const uint32_t n = static_cast<uint32_t>(chunk.size());
  const char header[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                          static_cast<char>(n >> 8), static_cast<char>(n)};
  out->append(header, 4);
  out->append(chunk);
}

bool SplitChunks(const std::string& blob, std::vector<std::string>* chunks) {
  size_t at = 0;
  while (at < blob.size()) {
    if (blob.size() - at < 4) return false;
    uint32_t n = 0;
    for (int i = 0; i < 4; ++i) n = (n << 8) | static_cast<unsigned char>(blob[at + i]);
    at += 4;
    if (blob.size() - at < n) return false;
    chunks->push_back(blob.substr(at, n));
    at += n;
  }
  return true;
}

}  // namespace kbisect
