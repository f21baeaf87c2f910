// Copyright 2026 The kbisect Authors.
#include "bench/lz4_size_bench.h"

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "bench/bench_util.h"

namespace kbisect_bench {

std::string WriteCompressedSizeBench(const std::string& dir) {
  const std::string source = dir + "/size.c";
  std::ofstream(source) << R"(#include <stdio.h>
#include <stdlib.h>
#include "lz4.h"
int main(int argc, char** argv) {
  FILE* f = argc > 1 ? fopen(argv[1], "rb") : NULL;
  if (!f) return 2;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* src = malloc(size);
  if (fread(src, 1, size, f) != (size_t)size) return 2;
  char* dst = malloc(LZ4_compressBound((int)size));
#if defined(LZ4_VERSION_NUMBER) && LZ4_VERSION_NUMBER >= 10700
  int out = LZ4_compress_default(src, dst, (int)size, LZ4_compressBound((int)size));
#else
  int out = LZ4_compress(src, dst, (int)size);
#endif
  printf("compressed: %d bytes\n", out);
  return out > 0 ? 0 : 1;
}
)";
  const std::string corpus = dir + "/corpus.txt";
  const kbisect_bench::Shell made = RunShell(absl::StrCat(
      "python3 -c \"\nimport random\nr = random.Random(7)\n"
      "words = [''.join(r.choice('etaoinshrdlucmfwypvbgkqjxz') for _ in range(r.randint(2, 9))) "
      "for _ in range(3000)]\nout = []\nn = 0\nwhile n < 2000000:\n"
      "    line = ' '.join(r.choice(words) for _ in range(r.randint(5, 15))) + '\\n'\n"
      "    out.append(line)\n    n += len(line)\n"
      "    if r.random() < 0.05: out.append(bytes(r.getrandbits(8) for _ in range(200)).hex() + "
      "'\\n')\nopen('",
      corpus, "', 'w').write(''.join(out))\n\""));
  if (made.exit_code != 0) return "";
  const std::string bench = dir + "/bench-size.sh";
  std::ofstream(bench) << "#!/bin/sh\nt=$(mktemp -d) || exit 1\ntrap 'rm -rf \"$t\"' EXIT\n"
                       << "cp lib/liblz4.a \"$t/l.a\" 2>/dev/null && ranlib \"$t/l.a\" 2>/dev/null "
                       << "&&\n  cc -O2 -w -I lib " << source
                       << " \"$t/l.a\" -o \"$t/size\" 2>/dev/null ||\n  cc -O2 -w -I lib " << source
                       << " -L lib -llz4 -Wl,-rpath,\"$PWD/lib\" -o \"$t/size\" || exit 1\n"
                       << "\"$t/size\" " << corpus << "\n";
  if (RunShell("chmod +x " + bench).exit_code != 0) return "";
  return bench;
}

}  // namespace kbisect_bench
