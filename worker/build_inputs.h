// Copyright 2026 The kbisect Authors.
//
// What a build reads, learned from the builds themselves. A new build starts from the built
// entry nearest to its commit (build_cache.h), and "nearest" should count the changed paths the
// build reads: a change the build never reads (lz4's tests, documentation and programs for
// `make -C lib`) costs an incremental build nothing, one file of the library costs a full
// compile. Counting every path alike, a build cache started lz4's build from an entry whose
// library differed (a 5 s compile) rather than one whose library was the same (0.03 s).
//
// A build's reads are seen in the access times of the checkout's files (ReadWatch). Linux's
// default, `relatime`, records the first read of a file after it was written (or after its
// access time was set back to its modification time, as the watch does before the build);
// `strictatime` records every read; `noatime` none, and then nothing is learned and every path
// counts as an input.
//
// What is learned (BuildInputs) is the files read and, in the directories that hold one, the
// files seen there and not read: a file that appears later beside the files read (a new source
// file of the library) is taken as an input, one the builds saw and never read (lib/README.md)
// is not. A file read by a build once stays an input: a later incremental build reads only what
// it compiles again.
#ifndef KBISECT_WORKER_BUILD_INPUTS_H_
#define KBISECT_WORKER_BUILD_INPUTS_H_

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kbisect {

// The files of a checkout a build command reads ('/'-separated paths relative to its top), or
// nothing known. Knowledge is only ever whole: it starts from a build of a fresh checkout, which
// reads every input, and grows with each build started from a build it knows (build_cache.h). A
// value type.
class BuildInputs {
 public:
  // Nothing known: every path is an input.
  BuildInputs() = default;

  // The builds read the files `read`; `unread` are files they saw, unread, in the directories of
  // files they read (others are ignored).
  static BuildInputs Read(const std::set<std::string>& read, const std::set<std::string>& unread);

  // Whether anything is known.
  bool known() const { return known_; }

  // Whether a change of `path` may make an incremental build do work: true when nothing is
  // known, when a build read it, when it names a directory above a file read (a submodule's
  // gitlink), and when it lies beside a file read and no build saw it.
  bool IsInput(std::string_view path) const;

  // The number of `paths` that are inputs.
  int CountInputs(const std::vector<std::string>& paths) const;

  // Adds what `other` knows (nothing when it knows nothing): a file either read is read.
  void Merge(const BuildInputs& other);

  // The files read, and the files seen unread beside them (empty when nothing is known).
  const std::set<std::string>& read() const { return read_; }
  const std::set<std::string>& unread() const { return unread_; }

 private:
  bool known_ = false;
  std::set<std::string> read_;
  std::set<std::string> unread_;
  std::set<std::string> read_dirs_;  // The directories of read_ ("" is the top).
};

// Watches a checkout for the files a build reads: started just before the build, asked when it
// has ended. Uses the file system's clock and access times only.
class ReadWatch {
 public:
  // Starts watching `checkout` (a directory), once the file system's clock has moved past the
  // last write before the call (at most a tick of it, 1-10 ms). Sets the access time of every
  // file under it that was read since it was written back to its modification time. `stamp` is
  // a path outside the checkout that this may create and overwrite: its times mark the start.
  // The watch is off when the file system under the stamp records no reads (noatime) or the
  // stamp cannot be written.
  static ReadWatch Start(const std::string& checkout, const std::string& stamp);

  // Whether reads are being recorded.
  bool on() const { return on_; }

  // What the build read: the regular files under the checkout (none under a `.git`) read since
  // Start and not written since, and the files beside them it did not read nor write, of those
  // that `tracked` accepts (a relative path; null: every file). nullopt when the watch is off.
  std::optional<BuildInputs> Reads(
      const std::function<bool(const std::string&)>& tracked = nullptr) const;

 private:
  std::string checkout_;
  bool on_ = false;
  long long since_ns_ = 0;  // The file system's time at the start, in ns since the epoch.
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_BUILD_INPUTS_H_
