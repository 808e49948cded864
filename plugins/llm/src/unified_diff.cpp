#include "unified_diff.hpp"
#include "text.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kforge::llm {

namespace {

constexpr size_t kMaxTableCells = size_t{1} << 24;

enum class Op : char { keep = ' ', remove = '-', add = '+' };

struct Step {
  Op op;
  size_t a;  // line index in `before` (keep/remove)
  size_t b;  // line index in `after` (keep/add)
};

// The edit script turning a into b: common head, LCS-aligned middle, common tail.
std::vector<Step> edit_script(const std::vector<std::string_view>& a,
                              const std::vector<std::string_view>& b) {
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) {
    ++tail;
  }
  const size_t n = a.size() - head - tail;
  const size_t m = b.size() - head - tail;

  std::vector<Step> steps;
  for (size_t i = 0; i < head; ++i) steps.push_back({Op::keep, i, i});
  if (n * m <= kMaxTableCells) {
    // lcs[i][j]: length of the LCS of a[head+i..] and b[head+j..] within the middle.
    std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
    auto at = [&](size_t i, size_t j) -> uint32_t& { return lcs[i * (m + 1) + j]; };
    for (size_t i = n; i-- > 0;) {
      for (size_t j = m; j-- > 0;) {
        at(i, j) = a[head + i] == b[head + j] ? at(i + 1, j + 1) + 1
                                              : std::max(at(i + 1, j), at(i, j + 1));
      }
    }
    size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[head + i] == b[head + j]) {
        steps.push_back({Op::keep, head + i++, head + j++});
      } else if (j == m || (i < n && at(i + 1, j) >= at(i, j + 1))) {
        steps.push_back({Op::remove, head + i++, head + j});
      } else {
        steps.push_back({Op::add, head + i, head + j++});
      }
    }
  } else {
    for (size_t i = 0; i < n; ++i) steps.push_back({Op::remove, head + i, head});
    for (size_t j = 0; j < m; ++j) steps.push_back({Op::add, head + n, head + j});
  }
  for (size_t t = 0; t < tail; ++t) {
    steps.push_back({Op::keep, a.size() - tail + t, b.size() - tail + t});
  }
  return steps;
}

// GNU's range form: "start,count", ",1" left out, an empty range at the line before it.
std::string range(size_t first, size_t count) {
  std::string text = std::to_string(count == 0 ? first : first + 1);
  if (count != 1) text += "," + std::to_string(count);
  return text;
}

void emit_line(std::string& out, char marker, std::string_view line) {
  out.push_back(marker);
  out.append(line);
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

}  // namespace

std::string unified_diff(std::string_view before, std::string_view after,
                         std::string_view before_label, std::string_view after_label,
                         int context) {
  if (before == after) return {};
  const std::vector<std::string_view> a = lines_with_ends(before);
  const std::vector<std::string_view> b = lines_with_ends(after);
  const std::vector<Step> steps = edit_script(a, b);
  const size_t ctx = static_cast<size_t>(std::max(0, context));

  std::string out;
  out += "--- " + std::string(before_label) + "\n";
  out += "+++ " + std::string(after_label) + "\n";
  size_t s = 0;
  while (s < steps.size()) {
    // Next change, then grow a hunk while changes are at most 2*context lines apart.
    while (s < steps.size() && steps[s].op == Op::keep) ++s;
    if (s == steps.size()) break;
    size_t first = s >= ctx ? s - ctx : 0;
    size_t last = s;  // last changed step in the hunk
    for (size_t t = s + 1; t < steps.size(); ++t) {
      if (steps[t].op == Op::keep) continue;
      if (t - last - 1 > 2 * ctx) break;  // contexts would not touch: next hunk
      last = t;
    }
    size_t end = std::min(steps.size(), last + 1 + ctx);
    size_t a_count = 0, b_count = 0;
    for (size_t t = first; t < end; ++t) {
      if (steps[t].op != Op::add) ++a_count;
      if (steps[t].op != Op::remove) ++b_count;
    }
    out += "@@ -" + range(steps[first].a, a_count) + " +" + range(steps[first].b, b_count) + " @@\n";
    for (size_t t = first; t < end; ++t) {
      const Step& step = steps[t];
      emit_line(out, static_cast<char>(step.op), step.op == Op::add ? b[step.b] : a[step.a]);
    }
    s = end;
  }
  return out;
}

}  // namespace kforge::llm
