//===- OnnxAnalysis.cpp - ONNX's checker and inference, isolated ----------===//
//
// The child writes lines to a pipe: "C i" before checking node i, then
// "E i n" and an n-byte message if the checker rejects it, or "K" when every
// node passed; after inference "V n" and an n-byte GraphProto holding the
// inferred value_info, or "X" if inference threw. Anything else (death, a
// hang past the deadline) is read as the last line's state.
//
//===----------------------------------------------------------------------===//

#include "OnnxAnalysis.h"

#include "onnx/checker.h"
#include "onnx/shape_inference/implementation.h"
#include "llvm/ADT/StringRef.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace pcc::import {
namespace {

/// Memory the child may use beyond what the parent already maps.
constexpr rlim_t kChildExtraBytes = rlim_t(4) << 30;

/// First line of an exception message, without ONNX's bracketed prefixes.
std::string firstLine(const char *what) {
  llvm::StringRef msg = llvm::StringRef(what).split('\n').first.trim();
  while (msg.consume_front("["))
    msg = msg.split(']').second.trim();
  return msg.str();
}

void writeAll(int fd, const std::string &s) {
  for (size_t done = 0; done < s.size();) {
    ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n <= 0)
      _exit(1);
    done += n;
  }
}

void limitMemory() {
  long pages = 0;
  if (FILE *f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1)
      pages = 0;
    std::fclose(f);
  }
  rlim_t bytes = rlim_t(pages) * sysconf(_SC_PAGESIZE) + kChildExtraBytes;
  rlimit limit = {bytes, bytes};
  setrlimit(RLIMIT_AS, &limit);
}

[[noreturn]] void runChild(onnx::ModelProto &model,
                           const std::vector<int> &order, int out) {
  // ONNX's failures must stay in this process: default signal actions (no
  // clean-up handlers of pcc's), and nothing printed on pcc's streams.
  for (int sig : {SIGSEGV, SIGFPE, SIGBUS, SIGILL, SIGABRT, SIGINT, SIGTERM,
                  SIGHUP})
    signal(sig, SIG_DFL);
  int devnull = open("/dev/null", O_WRONLY);
  if (devnull >= 0) {
    dup2(devnull, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
  }
  limitMemory();

  // ONNX walks nodes in file order and trusts declared intermediate shapes:
  // give it dependency order and no declarations to trust.
  onnx::GraphProto &graph = *model.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> sorted;
  for (int i : order)
    *sorted.Add() = graph.node(i);
  graph.mutable_node()->Swap(&sorted);
  graph.clear_value_info();
  for (auto &o : *graph.mutable_output())
    if (o.type().has_tensor_type())
      o.mutable_type()->mutable_tensor_type()->clear_shape();

  onnx::checker::CheckerContext ctx;
  ctx.set_ir_version(static_cast<int>(model.ir_version()));
  std::unordered_map<std::string, int> imports;
  for (const auto &imp : model.opset_import())
    imports[imp.domain()] = static_cast<int>(imp.version());
  ctx.set_opset_imports(imports);
  // The names in scope: what an If or Loop body may read from outside it.
  onnx::checker::LexicalScopeContext scope;
  for (const auto &in : graph.input())
    scope.add(in.name());
  for (const auto &init : graph.initializer())
    scope.add(init.name());
  for (size_t k = 0; k < order.size(); ++k) {
    writeAll(out, "C " + std::to_string(order[k]) + "\n");
    try {
      onnx::checker::check_node(graph.node(k), ctx, scope);
      for (const auto &o : graph.node(k).output())
        scope.add(o);
    } catch (const std::exception &e) {
      std::string msg = firstLine(e.what());
      writeAll(out, "E " + std::to_string(order[k]) + " " +
                        std::to_string(msg.size()) + "\n" + msg);
      _exit(0);
    }
  }
  writeAll(out, "K\n");

  try {
    onnx::ShapeInferenceOptions options(/*check_type=*/false,
                                        /*strict_mode=*/0, /*data_prop=*/true);
    onnx::shape_inference::InferShapes(
        model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (...) {
    writeAll(out, "X\n");
    _exit(0);
  }
  onnx::GraphProto shapes;
  *shapes.mutable_value_info() = graph.value_info();
  std::string bytes;
  shapes.SerializeToString(&bytes);
  writeAll(out, "V " + std::to_string(bytes.size()) + "\n" + bytes);
  _exit(0);
}

std::chrono::steady_clock::time_point deadlineIn(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::chrono::duration<double>(seconds));
}

} // namespace

OnnxAnalysis::OnnxAnalysis(const onnx::ModelProto &model,
                           const std::vector<int> &order) {
  // Inference takes ~20 us a node (0.09 s for 5,000); a hang is cut short.
  // Checks never hung in testing: their deadline only guards against one.
  checkSeconds = 30 + 0.001 * order.size();
  inferSeconds = 3 + 0.0005 * order.size();
  // Build the schema registry here, once, rather than in every child.
  (void)onnx::OpSchemaRegistry::Instance();
  int fds[2];
  if (pipe(fds) != 0)
    return;
  std::fflush(nullptr);
  pid = fork();
  if (pid == 0) {
    close(fds[0]);
    runChild(const_cast<onnx::ModelProto &>(model), order, fds[1]);
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return;
  }
  fd = fds[0];
}

OnnxAnalysis::~OnnxAnalysis() { stop(); }

void OnnxAnalysis::stop() {
  if (pid > 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
  if (fd >= 0) {
    close(fd);
    fd = -1;
  }
}

bool OnnxAnalysis::fill(std::chrono::steady_clock::time_point deadline) {
  if (fd < 0)
    return false;
  double left = std::chrono::duration<double>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
  pollfd p = {fd, POLLIN, 0};
  if (left <= 0 || poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0)
    return false;
  char buf[65536];
  ssize_t got = read(fd, buf, sizeof(buf));
  if (got <= 0) {
    childEnded = true;
    return false;
  }
  pending.append(buf, got);
  return true;
}

bool OnnxAnalysis::readBytes(std::string &bytes, size_t n, double seconds) {
  auto deadline = deadlineIn(seconds);
  while (pending.size() < n)
    if (!fill(deadline))
      return false;
  bytes = pending.substr(0, n);
  pending.erase(0, n);
  return true;
}

bool OnnxAnalysis::readLine(std::string &line, double seconds) {
  auto deadline = deadlineIn(seconds);
  size_t eol;
  while ((eol = pending.find('\n')) == std::string::npos)
    if (!fill(deadline))
      return false;
  line = pending.substr(0, eol);
  pending.erase(0, eol + 1);
  return true;
}

std::optional<OnnxAnalysis::Rejection> OnnxAnalysis::checkNodes() {
  if (fd < 0)
    return std::nullopt; // no child (fork failed): pcc's own checks only
  int current = -1;
  std::string line;
  while (readLine(line, checkSeconds)) {
    llvm::StringRef l(line);
    if (l == "K")
      return std::nullopt;
    int node = -1;
    if (l.consume_front("C ") && !l.getAsInteger(10, node)) {
      current = node;
      continue;
    }
    size_t length = 0;
    auto [head, size] = l.drop_front(2).split(' ');
    std::string message;
    if (line.rfind("E ", 0) == 0 && !head.getAsInteger(10, node) &&
        !size.getAsInteger(10, length) && readBytes(message, length, 1.0)) {
      stop();
      return Rejection{node, "invalid node: " + message};
    }
    break;
  }
  bool died = childEnded;
  stop();
  // A child that merely ran out of time on a loaded machine says nothing
  // about the model; one that died did so on the node it was checking.
  if (current < 0 || !died)
    return std::nullopt;
  return Rejection{current, "invalid node: ONNX's checker fails on it (a "
                            "malformed attribute or tensor)"};
}

std::vector<onnx::ValueInfoProto> OnnxAnalysis::inferredShapes() {
  std::vector<onnx::ValueInfoProto> out;
  std::string line, bytes;
  size_t length = 0;
  if (fd >= 0 && readLine(line, inferSeconds) && line.rfind("V ", 0) == 0 &&
      !llvm::StringRef(line).drop_front(2).getAsInteger(10, length) &&
      readBytes(bytes, length, inferSeconds)) {
    onnx::GraphProto shapes;
    if (shapes.ParseFromString(bytes))
      out.assign(shapes.value_info().begin(), shapes.value_info().end());
  }
  stop();
  return out;
}

} // namespace pcc::import
