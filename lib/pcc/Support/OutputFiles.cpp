//===- OutputFiles.cpp - writing outputs without harming user files -------===//
//
// Invariants:
// - pcc deletes only what it wrote: its own staging directory, or files an
//   earlier run listed in a marker; a directory holding anything else is
//   refused before anything is written.
// - The target is replaced by renames only (target -> hidden old name,
//   staging -> target, then the old files are removed one by one), so at
//   every moment either the earlier output or the new one is complete.
//
//===----------------------------------------------------------------------===//

#include "pcc/Support/OutputFiles.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <exception>
#include <unistd.h>

using namespace llvm;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace pcc {
namespace {

Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// Fixed-size registry: the signal handlers read it without allocating.
constexpr int kMaxStaging = 8;
char stagingPaths[kMaxStaging][4096];

/// Removes `p`: a file, or a directory and the files directly in it. Uses
/// only system calls, so that it can run in a signal handler.
void removeStagingPath(const char *p) {
  if (DIR *d = opendir(p)) {
    char child[4096 + 256];
    while (struct dirent *e = readdir(d)) {
      if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, ".."))
        continue;
      size_t n = std::strlen(p), m = std::strlen(e->d_name);
      if (n + m + 2 > sizeof(child))
        continue;
      std::memcpy(child, p, n);
      child[n] = '/';
      std::memcpy(child + n + 1, e->d_name, m + 1);
      unlink(child);
    }
    closedir(d);
    rmdir(p);
    return;
  }
  unlink(p);
}

void removeAllStaging() {
  for (auto &p : stagingPaths)
    if (p[0]) {
      removeStagingPath(p);
      p[0] = 0;
    }
}

void writeStderr(const char *s) {
  ssize_t ignored = write(STDERR_FILENO, s, std::strlen(s));
  (void)ignored;
}

void onCrash(int sig) {
  removeAllStaging();
  const char *trace = std::getenv("PCC_CRASH_TRACE");
  if (trace && *trace && *trace != '0') {
    writeStderr("error: internal error: pcc crashed; stack trace follows\n");
    sys::PrintStackTrace(errs());
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  const char *name = sig == SIGSEGV   ? "SIGSEGV"
                     : sig == SIGFPE  ? "SIGFPE"
                     : sig == SIGBUS  ? "SIGBUS"
                     : sig == SIGILL  ? "SIGILL"
                     : sig == SIGABRT ? "SIGABRT"
                                      : "a signal";
  writeStderr("error: internal error: pcc crashed (");
  writeStderr(name);
  writeStderr("); nothing was written. Please report it with the model "
              "(PCC_CRASH_TRACE=1 prints a stack trace)\n");
  _exit(70);
}

void onInterrupt(int sig) {
  removeAllStaging();
  signal(sig, SIG_DFL);
  raise(sig);
}

/// An exception nothing caught (from ONNX, protobuf or the standard
/// library): the same one line as a crash, instead of the C++ runtime's.
[[noreturn]] void onTerminate() {
  removeAllStaging();
  writeStderr("error: internal error: pcc stopped on an unexpected "
              "exception; nothing was written. Please report it with the "
              "model\n");
  _exit(70);
}

void onOutOfMemory(void *, const char *reason, bool) {
  removeAllStaging();
  writeStderr("error: pcc ran out of memory (");
  writeStderr(reason ? reason : "allocation failed");
  writeStderr("); nothing was written\n");
  _exit(1);
}

/// The names an earlier output lists in its marker, or std::nullopt if
/// `dir` has no readable marker.
std::optional<StringSet<>> markedFiles(StringRef dir) {
  SmallString<256> marker(dir);
  path::append(marker, kOutputMarker);
  auto buf = MemoryBuffer::getFile(marker);
  if (!buf)
    return std::nullopt;
  SmallVector<StringRef> lines;
  (*buf)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
  if (lines.empty() || lines[0].trim() != "pcc-output/1")
    return std::nullopt;
  StringSet<> names;
  for (StringRef l : ArrayRef(lines).drop_front())
    if (!l.trim().empty())
      names.insert(l.trim());
  names.insert(kOutputMarker);
  return names;
}

/// Names of the entries of `dir`.
Expected<std::vector<std::string>> entries(StringRef dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    out.push_back(path::filename(it->path()).str());
  if (ec)
    return fail("cannot list '" + dir + "': " + ec.message());
  return out;
}

/// Whether `inner` (a real path) is `outer` (a real path) or inside it.
bool within(StringRef inner, StringRef outer) {
  if (inner == outer)
    return true;
  return inner.starts_with(outer) && inner.size() > outer.size() &&
         path::is_separator(inner[outer.size()]);
}

std::string realPath(StringRef p) {
  SmallString<256> out;
  if (fs::real_path(p, out))
    return "";
  return std::string(out);
}

/// Checks that an existing `dir` may be replaced: it holds only files an
/// earlier pcc run listed in its marker.
Error checkReplaceable(StringRef dir) {
  auto names = entries(dir);
  if (!names)
    return names.takeError();
  if (names->empty())
    return Error::success();
  auto marked = markedFiles(dir);
  if (!marked)
    return fail("output directory '" + dir +
                "' exists and is not a pcc output (it has no " + kOutputMarker +
                " marker); choose another with -o or empty it");
  for (const std::string &n : *names)
    if (!marked->contains(n))
      return fail("output directory '" + dir + "' holds '" + n +
                  "', which pcc did not write; choose another with -o or "
                  "move it away");
  return Error::success();
}

/// Removes an earlier output that was moved aside: only the files its
/// marker lists, then the directory if that left it empty.
void removeEarlierOutput(StringRef dir) {
  auto marked = markedFiles(dir);
  if (!marked)
    return;
  for (const auto &n : *marked) {
    SmallString<256> p(dir);
    path::append(p, n.getKey());
    fs::remove(p);
  }
  fs::remove(dir); // fails, leaving it, if anything else appeared
}

} // namespace

std::string normalizeOutputPath(StringRef p) {
  SmallString<256> s(p);
  path::remove_dots(s, /*remove_dot_dot=*/false);
  StringRef out = s.str();
  while (out.size() > 1 && path::is_separator(out.back()))
    out = out.drop_back();
  StringRef last = path::filename(out);
  if (out.empty() || last == "." || last == "..")
    return "";
  return out.str();
}

void registerStagingPath(StringRef p) {
  for (auto &slot : stagingPaths)
    if (!slot[0]) {
      size_t n = std::min(p.size(), sizeof(slot) - 1);
      std::memcpy(slot, p.data(), n);
      slot[n] = 0;
      return;
    }
}

void unregisterStagingPath(StringRef p) {
  for (auto &slot : stagingPaths)
    if (slot[0] && p == StringRef(slot))
      slot[0] = 0;
}

/// The folder holding `target`, absolute: LLVM's unique names put a
/// relative model in the system's temporary directory (maybe another file
/// system), and staged files must be renamed into place.
static std::string besideTarget(StringRef target) {
  SmallString<256> absolute(target);
  fs::make_absolute(absolute);
  return path::parent_path(absolute).str();
}

void installFailureHandlers() {
  // Sanitizer builds keep their own reports of crashes.
#if !defined(__SANITIZE_ADDRESS__) && !defined(PCC_SANITIZE)
  for (int sig : {SIGSEGV, SIGFPE, SIGBUS, SIGILL, SIGABRT})
    signal(sig, onCrash);
#endif
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    signal(sig, onInterrupt);
  std::set_terminate(onTerminate);
  remove_bad_alloc_error_handler();
  install_bad_alloc_error_handler(onOutOfMemory);
}

Expected<StagedDirectory> StagedDirectory::create(StringRef dir,
                                                  ArrayRef<std::string> inputs) {
  std::string target = normalizeOutputPath(dir);
  if (target.empty())
    return fail("output directory '" + dir +
                "' names no directory of its own; give a new or earlier "
                "pcc output directory with -o");

  fs::file_status st;
  bool exists = !fs::status(target, st, /*Follow=*/false);
  if (exists) {
    if (fs::is_symlink_file(st))
      return fail("output directory '" + dir +
                  "' is a symbolic link; pcc does not write through links, "
                  "give the directory itself");
    if (!fs::is_directory(st))
      return fail("output path '" + dir +
                  "' is a file, not a directory; -o names the directory to "
                  "compile into");
    std::string real = realPath(target);
    SmallString<256> cwd;
    if (!fs::current_path(cwd) && within(realPath(cwd), real))
      return fail("output directory '" + dir +
                  "' is the current directory or contains it; choose "
                  "another with -o");
    for (const std::string &in : inputs) {
      std::string r = realPath(in);
      if (!r.empty() && within(r, real))
        return fail("output directory '" + dir + "' holds the input '" + in +
                    "'; choose another with -o");
    }
    if (auto err = checkReplaceable(target))
      return std::move(err);
  }

  StringRef parent = path::parent_path(target);
  if (!parent.empty())
    if (auto ec = fs::create_directories(parent))
      return fail("cannot create the parent of '" + dir +
                  "': " + ec.message());
  SmallString<256> prefix(besideTarget(target));
  path::append(prefix, "." + path::filename(target).str() + ".pcc-tmp");
  SmallString<256> staging;
  if (auto ec = fs::createUniqueDirectory(prefix, staging))
    return fail("cannot create a staging directory beside '" + dir +
                "': " + ec.message());
  registerStagingPath(staging);
  return StagedDirectory(target, std::string(staging),
                         std::vector<std::string>(inputs.begin(), inputs.end()));
}

StagedDirectory::StagedDirectory(StagedDirectory &&other)
    : target_(std::move(other.target_)), staging_(std::move(other.staging_)),
      inputs_(std::move(other.inputs_)) {
  other.staging_.clear();
}

StagedDirectory::~StagedDirectory() {
  if (staging_.empty())
    return;
  unregisterStagingPath(staging_);
  fs::remove_directories(staging_);
}

std::string StagedDirectory::file(StringRef name) const {
  SmallString<256> p(staging_);
  path::append(p, name);
  return std::string(p);
}

Error StagedDirectory::commit() {
  auto names = entries(staging_);
  if (!names)
    return names.takeError();
  {
    std::error_code ec;
    raw_fd_ostream os(file(kOutputMarker), ec);
    if (ec)
      return fail("cannot write '" + file(kOutputMarker) +
                  "': " + ec.message());
    os << "pcc-output/1\n";
    for (const std::string &n : *names)
      os << n << "\n";
  }

  // The target may have changed since create(): check again.
  fs::file_status st;
  SmallString<256> aside;
  if (!fs::status(target_, st, /*Follow=*/false)) {
    if (!fs::is_directory(st) || fs::is_symlink_file(st))
      return fail("output path '" + target_ + "' changed while compiling");
    if (auto err = checkReplaceable(target_))
      return err;
    SmallString<256> prefix(besideTarget(target_));
    path::append(prefix, "." + path::filename(target_).str() + ".pcc-old");
    if (auto ec = fs::createUniqueDirectory(prefix, aside))
      return fail("cannot move the earlier output '" + target_ +
                  "' aside: " + ec.message());
    if (auto ec = fs::rename(target_, aside)) {
      fs::remove(aside);
      return fail("cannot move the earlier output '" + target_ +
                  "' aside: " + ec.message());
    }
  }
  if (auto ec = fs::rename(staging_, target_)) {
    if (!aside.empty())
      fs::rename(aside, target_);
    return fail("cannot move the output into '" + target_ +
                "': " + ec.message());
  }
  unregisterStagingPath(staging_);
  staging_.clear();
  if (!aside.empty())
    removeEarlierOutput(aside);
  return Error::success();
}

Error writeFileAtomically(StringRef p, StringRef contents,
                          ArrayRef<std::string> inputs) {
  if (p == "-") {
    outs() << contents;
    outs().flush();
    return Error::success();
  }
  std::string target = normalizeOutputPath(p);
  if (target.empty())
    return fail("output file '" + p + "' names no file");
  fs::file_status st;
  if (!fs::status(target, st, /*Follow=*/true) && fs::is_directory(st))
    return fail("output file '" + p + "' is a directory");
  for (const std::string &in : inputs) {
    bool same = false;
    if (!fs::equivalent(target, in, same) && same)
      return fail("output file '" + p + "' is the input '" + in +
                  "'; pcc never overwrites its inputs");
  }
  SmallString<256> model(besideTarget(target));
  path::append(model, "." + path::filename(target).str() + ".pcc-tmp-%%%%%%");
  int fd;
  SmallString<256> tmp;
  if (auto ec = fs::createUniqueFile(model, fd, tmp))
    return fail("cannot write '" + p + "': " + ec.message());
  registerStagingPath(tmp);
  auto cleanup = [&] {
    fs::remove(tmp);
    unregisterStagingPath(tmp);
  };
  {
    raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << contents;
    os.close();
    if (os.has_error()) {
      std::string why = os.error().message();
      os.clear_error();
      cleanup();
      return fail("cannot write '" + p + "': " + why);
    }
  }
  if (auto ec = fs::rename(tmp, target)) {
    cleanup();
    return fail("cannot write '" + p + "': " + ec.message());
  }
  unregisterStagingPath(tmp);
  return Error::success();
}

} // namespace pcc
