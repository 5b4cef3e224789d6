//===- Status.h - runtime error reporting -----------------------*- C++ -*-===//
//
// Runtime functions return Status; the executable's main() prints the message
// as one "error:" line and exits with status 1. Kernels never abort: an index
// out of range in user data (Gather) is reported through kernelError().
//
//===----------------------------------------------------------------------===//

#ifndef PCCRT_STATUS_H
#define PCCRT_STATUS_H

#include <string>

namespace pccrt {

class Status {
public:
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.message_ = std::move(message);
    s.failed_ = true;
    return s;
  }
  bool isOk() const { return !failed_; }
  const std::string &message() const { return message_; }

private:
  std::string message_;
  bool failed_ = false;
};

/// Records the first error a kernel hits while running; main() checks it
/// after each run.
void kernelError(const std::string &message);
/// Returns and clears the recorded kernel error ("" if none).
std::string takeKernelError();

} // namespace pccrt

#endif // PCCRT_STATUS_H
