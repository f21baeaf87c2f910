// Copyright 2026 The kbisect Authors.
//
// What a build reads, learned from the builds themselves. A new build starts from the built
// entry nearest to its commit (build_cache.h), and "nearest" should count the changed paths the
// build reads: a change the build never reads (lz4's tests, documentation and programs for
// `make -C lib`) costs an incremental build nothing, one file of the library costs a full
// compile. Counting every path alike, a build cache once started lz4's build from the entry two
// commits away whose library differed (a 5 s compile) rather than the one four commits away
// whose library was the same (0.03 s).
//
// A build's reads are seen in the access times of the checkout's files (ReadWatch). Linux's
// default, `relatime`, records the first read of a file after it was written (or after its
// access time was set back to its modification time, as the watch does before the build);
// `strictatime` records every read; `noatime` none, and then nothing is learned and every path
// counts as an input. What is learned is kept as directories
// (BuildInputs): a path is an input when its directory holds a file a build read. Coarser than
// files, it also covers the files added later beside the ones read, such as a new source file of
// the library, and a file read by a build once stays an input (a later incremental build reads
// only what it compiles again).
#ifndef KBISECT_WORKER_BUILD_INPUTS_H_
#define KBISECT_WORKER_BUILD_INPUTS_H_

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kbisect {

// The directories of a repository whose files a build command reads ('/'-separated, relative to
// the checkout's top; "" is the top), or nothing known. Knowledge is only ever whole: it starts
// from a build of a fresh checkout, which reads every input, and grows with each build started
// from a build it knows (build_cache.h). A value type.
class BuildInputs {
 public:
  // Nothing known: every path is an input.
  BuildInputs() = default;

  // The builds read files in `dirs`.
  static BuildInputs Read(std::set<std::string> dirs);

  // Whether anything is known.
  bool known() const { return known_; }

  // Whether a change of `path` may make an incremental build do work: true when nothing is
  // known, when a file in the path's directory was read, or when the path names a directory
  // above one that was (a submodule's gitlink, a directory replaced by a file).
  bool IsInput(std::string_view path) const;

  // The number of `paths` that are inputs.
  int CountInputs(const std::vector<std::string>& paths) const;

  // Adds what `other` knows (nothing when it knows nothing).
  void Merge(const BuildInputs& other);

  // The directories read (empty when nothing is known).
  const std::set<std::string>& dirs() const { return dirs_; }

 private:
  bool known_ = false;
  std::set<std::string> dirs_;
};

// Watches a checkout for the files a build reads: started just before the build, asked when it
// has ended. Uses the file system's clock and access times only.
class ReadWatch {
 public:
  // Starts watching `checkout` (a directory), once the file system's clock has moved past the
  // last write before the call (at most a tick of it, 1-10 ms). Sets the access time of every
  // file under it that was read since it was written back to its modification time. `stamp` is a
  // path outside the checkout that this may create and overwrite: its times mark the start. The
  // watch is off when the file system under the stamp records no reads (noatime) or the stamp
  // cannot be written.
  static ReadWatch Start(const std::string& checkout, const std::string& stamp);

  // Whether reads are being recorded.
  bool on() const { return on_; }

  // The directories of the regular files under the checkout (none under a `.git`) that were
  // read since Start and not written since: nullopt when the watch is off.
  std::optional<std::set<std::string>> DirsRead() const;

 private:
  std::string checkout_;
  bool on_ = false;
  long long since_ns_ = 0;  // The file system's time at the start, in ns since the epoch.
};

}  // namespace kbisect

#endif  // KBISECT_WORKER_BUILD_INPUTS_H_
