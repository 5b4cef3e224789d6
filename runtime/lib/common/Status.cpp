//===- Status.cpp - kernel error slot -------------------------------------===//

#include "pccrt/Status.h"

namespace pccrt {

static std::string pendingKernelError;

void kernelError(const std::string &message) {
  if (pendingKernelError.empty())
    pendingKernelError = message;
}

std::string takeKernelError() {
  std::string e;
  e.swap(pendingKernelError);
  return e;
}

} // namespace pccrt
