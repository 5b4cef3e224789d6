//===- EinsumConverter.cpp - Einsum as transposes and a batched matmul ----===//
//
// An Einsum of one or two operands becomes sums over the indices only one
// operand has and the output lacks, then (two operands) each operand
// transposed to [batch, free, contracted] / [batch, contracted, free] and
// reshaped to three dimensions, one MatMul, and a reshape and transpose to
// the output's index order: ops every target runs and every strategy
// splits. An ellipsis stands for the same leading dimensions in every
// operand. Refused cleanly: more than two operands, an index repeated within
// one operand (a diagonal), and indices whose sizes differ (broadcasting).
//
//===----------------------------------------------------------------------===//

#include "ImportContext.h"

#include <map>

using namespace mlir;

namespace pcc::import {
namespace {

/// An operand's value and the index letter of each of its dimensions.
struct Term {
  Value value;
  std::string letters;
};

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// The equation's operand and output index strings, each ellipsis expanded
/// into upper-case letters the equation does not use.
FailureOr<std::pair<SmallVector<std::string>, std::string>>
parseEquation(NodeContext &c, StringRef equation, ArrayRef<int64_t> ranks) {
  std::string eq;
  for (char ch : equation)
    if (ch != ' ')
      eq += ch;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  SmallVector<StringRef> parts;
  StringRef(lhs).split(parts, ',');
  SmallVector<std::string> terms;
  for (StringRef t : parts)
    terms.push_back(t.str());
  if (terms.size() != ranks.size())
    return c.error() << "Einsum equation '" << equation << "' names "
                     << terms.size() << " operands, the node has "
                     << ranks.size();
  std::string used = eq;
  auto fresh = [&]() {
    for (char ch = 'A'; ch <= 'Z'; ++ch)
      if (used.find(ch) == std::string::npos) {
        used += ch;
        return ch;
      }
    return '\0';
  };
  std::string ellipsis;
  bool haveEllipsis = false;
  for (auto [i, t] : llvm::enumerate(terms)) {
    size_t at = t.find("...");
    int64_t explicitDims = int64_t(t.size()) - (at == std::string::npos ? 0 : 3);
    if (at == std::string::npos) {
      if (explicitDims != ranks[i])
        return c.error() << "Einsum operand " << i << " has rank " << ranks[i]
                         << " but '" << t << "' names " << explicitDims
                         << " indices";
      continue;
    }
    int64_t covered = ranks[i] - explicitDims;
    if (covered < 0)
      return c.error() << "Einsum operand " << i << " has rank " << ranks[i]
                       << ", fewer than '" << t << "' names";
    if (!haveEllipsis) {
      for (int64_t k = 0; k < covered; ++k)
        ellipsis += fresh();
      haveEllipsis = true;
    } else if (int64_t(ellipsis.size()) != covered) {
      return c.error() << "Einsum ellipses covering different numbers of "
                          "dimensions (broadcasting) are not supported";
    }
    t.replace(at, 3, ellipsis);
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
    size_t at = out.find("...");
    if (at != std::string::npos)
      out.replace(at, 3, ellipsis);
  } else {
    // Implicit output: the ellipsis, then indices used once, sorted.
    std::map<char, int> count;
    for (const std::string &t : terms)
      for (char ch : t)
        ++count[ch];
    out = ellipsis;
    for (auto [ch, n] : count)
      if (n == 1 && ellipsis.find(ch) == std::string::npos)
        out += ch;
  }
  return std::make_pair(terms, out);
}

/// `term` summed over its indices not in `keep`.
FailureOr<Term> sumOutside(NodeContext &c, Term term, StringRef keep) {
  SmallVector<int64_t> axes;
  std::string left;
  for (auto [d, ch] : llvm::enumerate(term.letters)) {
    if (keep.contains(ch))
      left += ch;
    else
      axes.push_back(d);
  }
  if (axes.empty())
    return term;
  auto sum = c.build1<ReduceSumOp>(
      term.value, {c.i64s("axes", axes), c.boolean("keepdims", false)});
  if (failed(sum))
    return failure();
  return Term{*sum, left};
}

/// `term` with its dimensions in the order of `order` (a permutation of its
/// letters).
FailureOr<Value> transposeTo(NodeContext &c, const Term &term,
                             StringRef order) {
  SmallVector<int64_t> perm;
  bool identity = true;
  for (auto [i, ch] : llvm::enumerate(order)) {
    perm.push_back(int64_t(term.letters.find(ch)));
    identity &= perm.back() == int64_t(i);
  }
  if (identity)
    return term.value;
  return c.build1<TransposeOp>(term.value, {c.i64s("perm", perm)});
}

FailureOr<Value> reshapeTo(NodeContext &c, Value v, ArrayRef<int64_t> shape) {
  if (shapeOf(v) == shape)
    return v;
  return c.build1<ReshapeOp>(v, {c.i64s("shape", shape)});
}

Results convertEinsum(NodeContext &c) {
  size_t n = c.node.input_size();
  if (n < 1 || n > 2)
    return c.error() << "Einsum of " << n
                     << " operands is not supported (one or two)";
  SmallVector<int64_t> ranks;
  for (size_t i = 0; i < n; ++i)
    ranks.push_back(c.inputType(i).getRank());
  auto parsed = parseEquation(c, c.stringAttr("equation", ""), ranks);
  if (failed(parsed))
    return failure();
  auto [letters, out] = *parsed;
  std::map<char, int64_t> size;
  SmallVector<Term> terms;
  for (size_t i = 0; i < n; ++i) {
    const std::string &t = letters[i];
    for (auto [d, ch] : llvm::enumerate(t)) {
      if (t.find(ch) != d)
        return c.error() << "Einsum index '" << ch << "' repeated in operand "
                         << i << " (a diagonal) is not supported";
      int64_t s = c.inputType(i).getDimSize(d);
      auto [it, fresh] = size.emplace(ch, s);
      if (!fresh && it->second != s)
        return c.error() << "Einsum index '" << ch << "' has sizes "
                         << it->second << " and " << s
                         << " (broadcasting is not supported)";
    }
    terms.push_back({c.input(i), t});
  }
  for (auto [i, ch] : llvm::enumerate(out))
    if (!size.count(ch) || out.find(ch) != i)
      return c.error() << "Einsum output index '" << ch
                       << "' is repeated or names no input dimension";

  // Indices one operand alone has and the output lacks are summed first.
  for (size_t i = 0; i < n; ++i) {
    std::string keep = out + (n == 2 ? letters[1 - i] : "");
    auto summed = sumOutside(c, terms[i], keep);
    if (failed(summed))
      return failure();
    terms[i] = *summed;
  }
  if (n == 1) {
    auto y = transposeTo(c, terms[0], out);
    if (failed(y))
      return failure();
    return SmallVector<Value>{*y};
  }

  const std::string &a = terms[0].letters, &b = terms[1].letters;
  std::string batch, freeA, freeB, contract;
  for (char ch : a) {
    bool inB = b.find(ch) != std::string::npos;
    bool inOut = out.find(ch) != std::string::npos;
    (inB ? (inOut ? batch : contract) : freeA) += ch;
  }
  for (char ch : b)
    if (a.find(ch) == std::string::npos)
      freeB += ch;
  auto product = [&](StringRef s) {
    int64_t p = 1;
    for (char ch : s)
      p *= size[ch];
    return p;
  };
  int64_t bs = product(batch), m = product(freeA), k = product(contract),
          nn = product(freeB);
  auto lhs = transposeTo(c, terms[0], batch + freeA + contract);
  auto rhs = transposeTo(c, terms[1], batch + contract + freeB);
  if (failed(lhs) || failed(rhs))
    return failure();
  auto l3 = reshapeTo(c, *lhs, {bs, m, k});
  auto r3 = reshapeTo(c, *rhs, {bs, k, nn});
  if (failed(l3) || failed(r3))
    return failure();
  auto mm = c.build1<MatMulOp>(ValueRange{*l3, *r3});
  if (failed(mm))
    return failure();
  std::string order = batch + freeA + freeB;
  SmallVector<int64_t> shape;
  for (char ch : order)
    shape.push_back(size[ch]);
  auto full = reshapeTo(c, *mm, shape);
  if (failed(full))
    return failure();
  auto y = transposeTo(c, Term{*full, order}, out);
  if (failed(y))
    return failure();
  return SmallVector<Value>{*y};
}

} // namespace

void addEinsumConverter(llvm::StringMap<Converter> &t) {
  t["Einsum"] = convertEinsum;
}

} // namespace pcc::import
