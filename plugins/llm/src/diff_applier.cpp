#include "diff_applier.hpp"
#include "text.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string_view>

namespace kforge::llm {

namespace {

std::string_view leading_whitespace(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  return line.substr(0, i);
}

// Lines of `text` without terminators, blank lines at both ends dropped.
std::vector<std::string_view> content_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  for (std::string_view line : lines_with_ends(text)) {
    if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
  }
  while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();
  size_t first = 0;
  while (first < lines.size() && trim(lines[first]).empty()) ++first;
  lines.erase(lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(first));
  return lines;
}

// Every whitespace run becomes one space; `origin[k]` is where normalised char k came from.
std::string collapse_whitespace(std::string_view text, std::vector<size_t>* origin = nullptr) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (is_space(text[i])) {
      if (!out.empty() && out.back() == ' ') continue;
      out.push_back(' ');
    } else {
      out.push_back(text[i]);
    }
    if (origin) origin->push_back(i);
  }
  return out;
}

std::vector<size_t> find_all(std::string_view haystack, std::string_view needle) {
  std::vector<size_t> at;
  for (size_t p = haystack.find(needle); p != std::string_view::npos;
       p = haystack.find(needle, p + needle.size())) {
    at.push_back(p);
  }
  return at;
}

std::string line_range(size_t first, size_t count) {
  return "lines " + std::to_string(first + 1) + "-" + std::to_string(first + count);
}

std::string score_text(double s) {
  char text[16];
  std::snprintf(text, sizeof text, "%.2f", s);
  return text;
}

// new_string re-indented so that lines written at old_string's indentation land at the
// indentation of the code they replace: LLMs often quote a block with its indentation
// stripped, and in Python the indentation is the program.
std::string reindent(std::string_view replacement, std::string_view code_indent,
                     std::string_view old_indent) {
  std::string out;
  for (std::string_view line : content_lines(replacement)) {
    if (trim(line).empty()) {
      out += "\n";
      continue;
    }
    if (line.substr(0, old_indent.size()) == old_indent) {
      out.append(code_indent);
      out.append(line.substr(old_indent.size()));
    } else {
      out.append(line);
    }
    out += "\n";
  }
  return out;
}

struct Span {
  size_t begin;
  size_t end;
};

// Replaces `spans` (sorted, disjoint) of `code` with `replacement`.
std::string splice(const std::string& code, const std::vector<Span>& spans,
                   const std::vector<std::string>& replacements) {
  std::string out;
  size_t pos = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    out.append(code, pos, spans[i].begin - pos);
    out += replacements[i];
    pos = spans[i].end;
  }
  out.append(code, pos, std::string::npos);
  return out;
}

class EditPlacer {
 public:
  EditPlacer(const std::string& code, const Modification& edit, int number,
             const ApplierOptions& options)
      : code_(code), edit_(edit), number_(number), options_(options), lines_(lines_with_ends(code)) {
    size_t offset = 0;
    for (std::string_view line : lines_) {
      line_begin_.push_back(offset);
      offset += line.size();
    }
    line_begin_.push_back(offset);
  }

  // The code with the edit applied, and how it was placed.
  std::pair<std::string, EditReport> apply() {
    if (auto done = exact()) return *done;
    std::vector<std::string_view> old_lines = content_lines(edit_.old_string);
    if (auto done = line_trimmed(old_lines)) return *done;
    if (auto done = whitespace()) return *done;
    if (edit_.replace_all) {
      fail("old_string is not in the code (exactly, line-trimmed or whitespace-normalised); "
           "replace_all edits are never placed by similarity");
    }
    return fuzzy(old_lines);
  }

 private:
  using Outcome = std::optional<std::pair<std::string, EditReport>>;

  [[noreturn]] void fail(const std::string& why) const { throw ApplyError(number_, why); }

  void check_unique(size_t matches, const char* level) const {
    if (matches > 1 && !edit_.replace_all) {
      fail("old_string matches " + std::to_string(matches) + " places (" + level +
           "); quote more surrounding lines to make it unique, or set replace_all");
    }
  }

  Outcome exact() {
    std::vector<size_t> at = find_all(code_, edit_.old_string);
    if (at.empty()) return std::nullopt;
    check_unique(at.size(), "exactly");
    std::vector<Span> spans;
    for (size_t p : at) spans.push_back({p, p + edit_.old_string.size()});
    return finish(spans, std::vector<std::string>(spans.size(), edit_.new_string), MatchLevel::exact, 1.0);
  }

  Outcome line_trimmed(const std::vector<std::string_view>& old_lines) {
    const size_t n = old_lines.size();
    if (n == 0 || n > lines_.size()) return std::nullopt;
    std::vector<size_t> windows;
    for (size_t i = 0; i + n <= lines_.size(); ++i) {
      bool same = true;
      for (size_t j = 0; j < n && same; ++j) same = trim(lines_[i + j]) == trim(old_lines[j]);
      if (same) {
        windows.push_back(i);
        i += n - 1;
      }
    }
    if (windows.empty()) return std::nullopt;
    check_unique(windows.size(), "line-trimmed");
    return replace_windows(windows, n, old_lines, MatchLevel::line_trimmed, 1.0);
  }

  Outcome whitespace() {
    std::vector<size_t> origin;
    std::string code = collapse_whitespace(code_, &origin);
    std::string old = collapse_whitespace(trim(edit_.old_string));
    if (old.empty()) return std::nullopt;
    std::vector<size_t> at = find_all(code, old);
    if (at.empty()) return std::nullopt;
    check_unique(at.size(), "whitespace-normalised");
    std::vector<Span> spans;
    for (size_t p : at) spans.push_back({origin[p], origin[p + old.size() - 1] + 1});
    std::string replacement(trim(edit_.new_string));
    return finish(spans, std::vector<std::string>(spans.size(), replacement), MatchLevel::whitespace, 1.0);
  }

  std::pair<std::string, EditReport> fuzzy(const std::vector<std::string_view>& old_lines) {
    const size_t n = old_lines.size();
    if (n == 0 || n > lines_.size()) fail("old_string is not in the code, and the code is shorter than it");
    std::string old_text;
    for (std::string_view line : old_lines) old_text += std::string(trim(line)) + "\n";
    const double floor = std::max(0.0, options_.fuzzy_threshold - options_.ambiguity_margin);
    std::vector<double> scores;
    for (size_t i = 0; i + n <= lines_.size(); ++i) {
      std::string window;
      for (size_t j = 0; j < n; ++j) window += std::string(trim(lines_[i + j])) + "\n";
      scores.push_back(similarity(window, old_text, floor));
    }
    size_t best = static_cast<size_t>(std::max_element(scores.begin(), scores.end()) - scores.begin());
    double runner_up = 0;
    size_t runner_at = 0;
    for (size_t i = 0; i < scores.size(); ++i) {
      bool overlaps = i + n > best && best + n > i;
      if (!overlaps && scores[i] > runner_up) {
        runner_up = scores[i];
        runner_at = i;
      }
    }
    if (scores[best] < options_.fuzzy_threshold) {
      fail(scores[best] > 0
               ? "old_string is not in the code; the closest " + line_range(best, n) +
                     " are only " + score_text(scores[best]) + " similar (" +
                     score_text(options_.fuzzy_threshold) + " needed)"
               : "old_string is not in the code, and nothing in it is similar");
    }
    if (runner_up > 0 && scores[best] - runner_up < options_.ambiguity_margin) {
      fail("old_string is not in the code, and two places resemble it about equally: " +
           line_range(best, n) + " (" + score_text(scores[best]) + ") and " +
           line_range(runner_at, n) + " (" + score_text(runner_up) + ")");
    }
    return *replace_windows({best}, n, old_lines, MatchLevel::fuzzy, scores[best]);
  }

  Outcome replace_windows(const std::vector<size_t>& windows, size_t n,
                          const std::vector<std::string_view>& old_lines, MatchLevel level,
                          double score) {
    std::string_view old_indent = leading_whitespace(old_lines.front());
    std::vector<Span> spans;
    std::vector<std::string> replacements;
    for (size_t first : windows) {
      Span span{line_begin_[first], line_begin_[first + n]};
      std::string text = reindent(edit_.new_string, leading_whitespace(lines_[first]), old_indent);
      // The last line of the file may lack a newline; so must its replacement.
      if (code_[span.end - 1] != '\n' && !text.empty()) text.pop_back();
      spans.push_back(span);
      replacements.push_back(std::move(text));
    }
    return finish(spans, replacements, level, score);
  }

  Outcome finish(const std::vector<Span>& spans, const std::vector<std::string>& replacements,
                 MatchLevel level, double score) {
    // check_unique() has ruled out several spans without replace_all.
    EditReport report{level, score, static_cast<int>(spans.size())};
    return std::make_pair(splice(code_, spans, replacements), report);
  }

  const std::string& code_;
  const Modification& edit_;
  const int number_;
  const ApplierOptions& options_;
  std::vector<std::string_view> lines_;
  std::vector<size_t> line_begin_;  // byte offset of each line, plus the end
};

}  // namespace

const char* to_string(MatchLevel level) {
  switch (level) {
    case MatchLevel::exact:
      return "exact";
    case MatchLevel::line_trimmed:
      return "line_trimmed";
    case MatchLevel::whitespace:
      return "whitespace";
    case MatchLevel::fuzzy:
      return "fuzzy";
  }
  return "unknown";
}

double similarity(std::string_view a_raw, std::string_view b_raw, double floor) {
  const std::string a = collapse_whitespace(trim(a_raw));
  const std::string b = collapse_whitespace(trim(b_raw));
  const size_t longer = std::max(a.size(), b.size());
  if (longer == 0) return 1.0;
  // Only distances up to this can reach `floor`: a band around the diagonal suffices.
  const size_t max_distance =
      floor <= 0 ? longer : static_cast<size_t>(std::floor((1.0 - floor) * static_cast<double>(longer)));
  const size_t length_gap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (length_gap > max_distance) return 0.0;
  const size_t too_far = max_distance + 1;
  std::vector<size_t> previous(b.size() + 1, too_far), current(b.size() + 1, too_far);
  for (size_t j = 0; j <= std::min(b.size(), max_distance); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    const size_t lo = i > max_distance ? i - max_distance : 0;
    const size_t hi = std::min(b.size(), i + max_distance);
    std::fill(current.begin(), current.end(), too_far);
    if (lo == 0) current[0] = i;
    size_t row_best = current[0];
    for (size_t j = std::max<size_t>(lo, 1); j <= hi; ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      size_t value = std::min({previous[j - 1] + cost, previous[j] + 1, current[j - 1] + 1});
      current[j] = std::min(value, too_far);
      row_best = std::min(row_best, current[j]);
    }
    if (row_best > max_distance) return 0.0;
    std::swap(previous, current);
  }
  const size_t distance = previous[b.size()];
  if (distance > max_distance) return 0.0;
  double score = 1.0 - static_cast<double>(distance) / static_cast<double>(longer);
  return score < floor ? 0.0 : score;
}

ApplyResult apply_modifications(const std::string& code, const std::vector<Modification>& edits,
                                const ApplierOptions& options) {
  ApplyResult result;
  result.code = code;
  for (size_t i = 0; i < edits.size(); ++i) {
    EditPlacer placer(result.code, edits[i], static_cast<int>(i + 1), options);
    auto [next, report] = placer.apply();
    result.code = std::move(next);
    result.edits.push_back(report);
  }
  return result;
}

}  // namespace kforge::llm
