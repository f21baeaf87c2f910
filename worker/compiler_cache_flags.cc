// Copyright 2026 The kbisect Authors.
#include "worker/compiler_cache_flags.h"

#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/strip.h"

namespace kbisect {

void AddCompilerCacheRemoteFlags(CLI::App* app, CompilerCacheRemote* remote) {
  app->add_option("--compiler-cache-remote", remote->url,
                  "A remote storage the compiler cache shares with other hosts: "
                  "redis://HOST[:PORT], http://HOST[:PORT]/PATH or file:///DIR (ccache's "
                  "remote_storage); one that cannot be reached costs a warning, never a build")
      ->envname("KBISECT_COMPILER_CACHE_REMOTE")
      ->check([](const std::string& url) {
        const absl::Status checked = CheckCompilerCacheRemoteUrl(url);
        // The flag's name is said once, before the message.
        return checked.ok() ? std::string()
                            : std::string(absl::StripPrefix(checked.message(),
                                                            "--compiler-cache-remote "));
      });
  app->add_flag("--compiler-cache-read-only", remote->read_only,
                "Read the --compiler-cache-remote, never write to it");
}

void AddBuildStoreFlag(CLI::App* app, std::string* dir) {
  app->add_option("--build-store", *dir,
                  "A directory on a shared file system where hosts of one hardware class share "
                  "their builds: a build that pays is published there, and fetched instead of "
                  "built; one that is missing or cannot be written costs a warning, never a build")
      ->envname("KBISECT_BUILD_STORE");
}

}  // namespace kbisect
