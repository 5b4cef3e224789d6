//===- TrainLoop.cpp - what a training run reads and prints ---------------===//

#include "TrainLoop.h"

#include <cstdio>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

namespace pccrt {

long countBatches(const std::string &dir) {
  long n = 0;
  struct stat st;
  while (stat((dir + "/batch_" + std::to_string(n)).c_str(), &st) == 0 &&
         S_ISDIR(st.st_mode))
    ++n;
  return n;
}

/// A person reading stdout: a terminal, outside mpirun and srun (which give
/// every rank a pseudo-terminal whatever they write to).
bool readByPerson() {
  for (const char *launcher : {"OMPI_COMM_WORLD_SIZE", "PMI_RANK",
                               "PMIX_RANK", "SLURM_PROCID"})
    if (std::getenv(launcher))
      return false;
  return isatty(fileno(stdout));
}

StepPrinter::StepPrinter(bool enabled)
    : enabled(enabled), terminal(readByPerson()) {}

void StepPrinter::step(long k, double loss, double ms) {
  if (!enabled)
    return;
  // %.9g keeps a float loss exact; JSON has no NaN or infinity, so those
  // are written as null.
  char value[32];
  if (loss == loss && loss - loss == 0)
    std::snprintf(value, sizeof value, "%.9g", loss);
  else
    std::snprintf(value, sizeof value, "null");
  if (terminal)
    std::printf("step %ld  loss %s  %.2f ms\n", k, value, ms);
  else
    std::printf("{\"step\": %ld, \"loss\": %s, \"ms\": %.3f}\n", k, value, ms);
  std::fflush(stdout);
}

} // namespace pccrt
