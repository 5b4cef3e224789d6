//===- OutputFiles.h - writing outputs without harming user files -*- C++ -*-===//
//
// pcc writes only into a directory it creates, or one that holds nothing but
// its own earlier output, recognised by a marker file (.pcc-output) listing
// what pcc wrote there. Everything is written into a fresh hidden sibling
// first and moved into place by rename at the end, so a failed or interrupted
// run leaves the earlier output (or nothing) behind, never a mix, and never
// deletes a file pcc did not write. Single files (--emit, calibrate) are
// written to a temporary name and renamed. No output may be, or hold, one of
// the run's inputs.
//
//===----------------------------------------------------------------------===//

#ifndef PCC_SUPPORT_OUTPUTFILES_H
#define PCC_SUPPORT_OUTPUTFILES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace pcc {

/// The marker pcc writes into every output directory: a first line
/// "pcc-output/1", then one name per line of each file pcc wrote.
inline constexpr llvm::StringLiteral kOutputMarker = ".pcc-output";

/// A directory being written: files go to a staging directory beside the
/// target until commit() moves them into place. Destroying an uncommitted
/// one removes the staging directory.
class StagedDirectory {
public:
  /// Checks that `dir` may receive pcc's output (absent, empty, or an earlier
  /// pcc output; not a file, a symbolic link, the current directory or one of
  /// its ancestors, and holding none of `inputs`) and creates the staging
  /// directory, and the parents of `dir` if needed.
  static llvm::Expected<StagedDirectory>
  create(llvm::StringRef dir, llvm::ArrayRef<std::string> inputs);

  StagedDirectory(StagedDirectory &&other);
  StagedDirectory &operator=(StagedDirectory &&) = delete;
  ~StagedDirectory();

  /// Path of `name` inside the staging directory.
  std::string file(llvm::StringRef name) const;
  /// The final directory, normalised (no trailing separator).
  const std::string &target() const { return target_; }

  /// Writes the marker and moves the staged files into place, replacing an
  /// earlier output.
  llvm::Error commit();

private:
  StagedDirectory(std::string target, std::string staging,
                  std::vector<std::string> inputs)
      : target_(std::move(target)), staging_(std::move(staging)),
        inputs_(std::move(inputs)) {}

  std::string target_, staging_;
  std::vector<std::string> inputs_;
};

/// Writes `contents` to `path` ("-" is stdout) through a temporary file and
/// a rename. Refuses a directory and any of `inputs`; a symbolic link is
/// replaced by the file, its target left alone.
llvm::Error writeFileAtomically(llvm::StringRef path, llvm::StringRef contents,
                                llvm::ArrayRef<std::string> inputs);

/// Normalises a user-given output path: trailing separators and "."
/// components go. Returns "" for a path that names no directory entry
/// ("", ".", "..", or one ending in "..").
std::string normalizeOutputPath(llvm::StringRef path);

/// Installs process-wide handlers: interrupts and crashes remove every
/// staging path still registered, a crash prints one "error:" line and exits
/// with status 70 (set PCC_CRASH_TRACE=1 for a stack trace instead), and
/// running out of memory is one "error:" line and exit status 1.
void installFailureHandlers();

/// Staging paths the failure handlers remove (directories one level deep, or
/// files). StagedDirectory registers its own.
void registerStagingPath(llvm::StringRef path);
void unregisterStagingPath(llvm::StringRef path);

} // namespace pcc

#endif // PCC_SUPPORT_OUTPUTFILES_H
