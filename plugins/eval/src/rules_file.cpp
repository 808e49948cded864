#include "rules_file.hpp"

#include "joined.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <kforge/eval/vocabulary.hpp>
#include <yaml-cpp/yaml.h>

#include <kforge/bounded_file.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <regex>
#include <stdexcept>
#include <vector>

namespace kforge::eval {
namespace {

// The harness reads its rules files through the same bound.
constexpr uint64_t kMaxRulesFileBytes = 1u << 20;

bool one_of(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::vector<std::string> sorted(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return names;
}

// ---- YAML as PyYAML's safe loader types it ----

// Whether PyYAML's SafeLoader makes `node` a Python str: a quoted or !!str scalar, or a
// plain one that none of YAML 1.1's implicit resolvers (bool, int, float, null,
// timestamp, merge) claims.
bool is_python_str(const YAML::Node& node) {
  if (!node.IsScalar()) return false;
  if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return true;
  if (node.Tag() != "?") return false;
  static const std::regex implicit(
      // bool
      "yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF"
      // float
      "|[-+]?(?:[0-9][0-9_]*)\\.[0-9_]*(?:[eE][-+][0-9]+)?|\\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
      "|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\\.[0-9_]*|[-+]?\\.(?:inf|Inf|INF)|\\.(?:nan|NaN|NAN)"
      // int
      "|[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+"
      // null, merge
      "|~|null|Null|NULL||<<"
      // timestamp
      "|[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"
      "|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \\t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\\.[0-9]*)?"
      "(?:[ \\t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?");
  return !std::regex_match(node.Scalar(), implicit);
}

// checker._flat_strings: a list of strings, nested lists flattened; anything else, one
// string (Python's str() of it: for a regular expression only a scalar's text matters).
void flat_strings(const YAML::Node& node, std::vector<std::string>& out) {
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) flat_strings(item, out);
  } else if (node.IsScalar()) {
    out.push_back(node.Scalar());
  }
}

// ---- Python's regular expressions ----

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool is_octal(char c) { return c >= '0' && c <= '7'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Reads a Python pattern as the `re` module's parser does (Lib/re/_parser.py, Python
// 3.11) and writes the same structure in PCRE2's syntax. What the two syntaxes read
// differently is settled here: escapes (Python refuses \p, \e, \g... that PCRE2 takes),
// group names (any identifier, any length), group references, inline flags (global ones
// only at the start), quantifier placement ("nothing to repeat", "multiple repeat") and
// {m,n} bounds; PCRE2 then finds what is left: unbalanced parentheses, ranges out of
// order, look-behinds of unbounded width.
class PythonPattern {
 public:
  explicit PythonPattern(const std::string& pattern) : s_(pattern) {}

  // "" and the PCRE2 pattern in `pcre`, or Python's complaint.
  std::string translate(std::string& pcre) {
    try {
      parse_sequence(/*depth=*/0);
      if (i_ < s_.size()) fail("unbalanced parenthesis");
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    pcre = out_;
    return "";
  }

 private:
  enum class Last { Nothing, Assertion, Item, Repeat };

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(what + " at position " + std::to_string(i_));
  }
  bool at_end() const { return i_ >= s_.size(); }
  char peek(size_t ahead = 0) const { return i_ + ahead < s_.size() ? s_[i_ + ahead] : '\0'; }

  void skip_verbose() {
    while (verbose_ && !at_end()) {
      if (std::isspace(static_cast<unsigned char>(peek()))) {
        ++i_;
      } else if (peek() == '#') {
        while (!at_end() && peek() != '\n') ++i_;
      } else {
        return;
      }
    }
  }

  // One alternative after another, up to ')' or the end.
  void parse_sequence(int depth) {
    Last last = Last::Nothing;
    bool first = depth == 0;  // global flags may come only before anything else
    for (;;) {
      skip_verbose();
      if (at_end() || peek() == ')') return;
      const char c = peek();
      if (c == '|') {
        out_ += '|';
        ++i_;
        last = Last::Nothing;
      } else if (c == '*' || c == '+' || c == '?' || (c == '{' && repeat_follows())) {
        if (last == Last::Nothing || last == Last::Assertion) fail("nothing to repeat");
        if (last == Last::Repeat) fail("multiple repeat");
        parse_repeat();
        last = Last::Repeat;
      } else if (c == '^' || c == '$') {
        out_ += c;
        ++i_;
        last = Last::Assertion;
      } else if (c == '(') {
        const bool added = parse_group(depth, first);
        if (added) last = Last::Item;
      } else if (c == '[') {
        parse_class();
        last = Last::Item;
      } else if (c == '\\') {
        last = parse_escape() ? Last::Assertion : Last::Item;
      } else {
        literal(c);
        ++i_;
        last = Last::Item;
      }
      if (last != Last::Nothing) first = false;
    }
  }

  void literal(char c) {
    if (std::strchr("\\^$.|?*+()[]{}", c) != nullptr && c != '\0') out_ += '\\';
    out_ += c;
  }

  // At a '{': whether it opens a repeat ({m}, {m,}, {,n}, {m,n}, {,}); otherwise it is a
  // literal brace.
  bool repeat_follows() const {
    size_t j = i_ + 1;
    if (j < s_.size() && s_[j] == '}') return false;
    while (j < s_.size() && is_digit(s_[j])) ++j;
    if (j < s_.size() && s_[j] == ',') {
      ++j;
      while (j < s_.size() && is_digit(s_[j])) ++j;
    }
    return j < s_.size() && s_[j] == '}';
  }

  void parse_repeat() {
    const size_t start = i_;
    if (peek() == '{') {
      ++i_;
      std::string lo, hi;
      while (is_digit(peek())) lo += s_[i_++];
      const bool comma = peek() == ',';
      if (comma) {
        ++i_;
        while (is_digit(peek())) hi += s_[i_++];
      } else {
        hi = lo;
      }
      ++i_;  // '}'
      constexpr unsigned long long kMaxRepeat = 4294967295ull;  // the C engine's MAXREPEAT
      const auto number = [&](const std::string& text) {
        if (text.size() > 10 || std::stoull(text) >= kMaxRepeat) {
          i_ = start;
          fail("the repetition number is too large");
        }
        return std::stoull(text);
      };
      const unsigned long long min = lo.empty() ? 0 : number(lo);
      const unsigned long long max = hi.empty() ? kMaxRepeat : number(hi);
      if (max < min) {
        i_ = start + 1;
        fail("min repeat greater than max repeat");
      }
      // PCRE2 counts to 65535: a larger bound is the same structure.
      const auto bound = [](unsigned long long n) { return std::to_string(std::min<unsigned long long>(n, 65535)); };
      out_ += "{" + bound(min) + "," + (hi.empty() ? "" : bound(max)) + "}";
    } else {
      out_ += s_[i_++];
    }
    if (peek() == '?' || peek() == '+') out_ += s_[i_++];  // lazy or possessive
  }

  // A group from its '('; false when it adds nothing to match ((?#...), global flags).
  bool parse_group(int depth, bool first) {
    const size_t open = i_;
    ++i_;
    if (peek() != '?') {
      const int number = ++groups_;
      open_groups_.push_back(number);
      out_ += '(';
      body(depth, open);
      open_groups_.pop_back();
      return true;
    }
    ++i_;
    const char kind = peek();
    if (kind == ':' || kind == '=' || kind == '!' || kind == '>') {
      out_ += std::string("(?") + kind;
      ++i_;
      body(depth, open);
      return true;
    }
    if (kind == '<' && (peek(1) == '=' || peek(1) == '!')) {
      out_ += std::string("(?<") + peek(1);
      i_ += 2;
      body(depth, open);
      return true;
    }
    if (kind == '#') {
      while (!at_end() && peek() != ')') ++i_;
      if (at_end()) {
        i_ = open;
        fail("missing ), unterminated comment");
      }
      ++i_;
      return false;
    }
    if (kind == 'P') {
      ++i_;
      if (peek() == '<') {
        ++i_;
        const std::string name = group_name('>');
        if (named_.count(name) != 0) {
          fail("redefinition of group name '" + name + "' as group " + std::to_string(groups_ + 1) + "; was group " +
               std::to_string(named_[name]));
        }
        const int number = ++groups_;
        named_[name] = number;
        open_groups_.push_back(number);
        out_ += '(';
        body(depth, open);
        open_groups_.pop_back();
        return true;
      }
      if (peek() == '=') {
        ++i_;
        const std::string name = group_name(')');
        if (named_.count(name) == 0) fail("unknown group name '" + name + "'");
        reference(named_[name]);
        return true;
      }
      fail(at_end() ? "unexpected end of pattern" : std::string("unknown extension ?P") + peek());
    }
    if (kind == '(') {
      ++i_;
      std::string id;
      while (!at_end() && peek() != ')') id += s_[i_++];
      if (at_end()) fail("missing ), unterminated name");
      ++i_;
      int number = 0;
      if (!id.empty() && std::all_of(id.begin(), id.end(), is_digit)) {
        number = id.size() > 9 ? 1 << 30 : std::stoi(id);
        if (number == 0) fail("bad group number");
        if (number > groups_) fail("invalid group reference " + id);
      } else {
        if (!is_identifier(id)) fail("bad character in group name '" + id + "'");
        if (named_.count(id) == 0) fail("unknown group name '" + id + "'");
        number = named_[id];
      }
      out_ += "(?(" + std::to_string(number) + ")";
      body(depth, open);
      return true;
    }
    if (std::strchr("aiLmsux-", kind) != nullptr && kind != '\0') return parse_flags(depth, first, open);
    fail(at_end() ? "unexpected end of pattern" : std::string("unknown extension ?") + kind);
  }

  // The rest of a group after its opening (its '(' at `open`), up to and including its ')'.
  void body(int depth, size_t open) {
    const bool verbose = verbose_;
    parse_sequence(depth + 1);
    verbose_ = verbose;
    if (at_end()) {
      i_ = open;
      fail("missing ), unterminated subpattern");
    }
    out_ += ')';
    ++i_;
  }

  bool parse_flags(int depth, bool first, size_t open) {
    std::string on, off;
    while (std::strchr("aiLmsux", peek()) != nullptr && !at_end()) on += s_[i_++];
    if (on.find('L') != std::string::npos) fail("bad inline flags: cannot use 'L' flag with a str pattern");
    if (on.find('a') != std::string::npos && on.find('u') != std::string::npos) {
      fail("bad inline flags: flags 'a', 'u' and 'L' are incompatible");
    }
    if (peek() == ')') {
      if (!first || depth > 0) {
        i_ = open;
        fail("global flags not at the start of the expression");
      }
      ++i_;
      if (on.find('x') != std::string::npos) verbose_ = true;
      const std::string kept = pcre_flags(on);
      if (!kept.empty()) out_ += "(?" + kept + ")";
      return false;
    }
    if (peek() == '-') {
      ++i_;
      while (std::strchr("aiLmsux", peek()) != nullptr && !at_end()) off += s_[i_++];
      if (off.empty()) fail("missing flag");
      if (off.find_first_of("auL") != std::string::npos) fail("bad inline flags: cannot turn off flags 'a', 'u' and 'L'");
      for (const char f : off) {
        if (on.find(f) != std::string::npos) fail("bad inline flags: flag turned on and off");
      }
    }
    if (peek() != ':') fail(at_end() ? "missing -, : or )" : std::string("unknown flag"));
    ++i_;
    const bool verbose = verbose_;
    if (on.find('x') != std::string::npos) verbose_ = true;
    if (off.find('x') != std::string::npos) verbose_ = false;
    const std::string kept_on = pcre_flags(on), kept_off = pcre_flags(off);
    out_ += "(?" + kept_on + (kept_off.empty() ? "" : "-" + kept_off) + ":";
    body(depth, open);
    verbose_ = verbose;
    return true;
  }

  // The flags PCRE2 shares with Python (a and u change only what \w and friends match;
  // x is applied here, while reading).
  static std::string pcre_flags(const std::string& flags) {
    std::string kept;
    for (const char f : flags) {
      if (f == 'i' || f == 'm' || f == 's') kept += f;
    }
    return kept;
  }

  static bool is_identifier(const std::string& name) {
    if (name.empty()) return false;
    for (size_t k = 0; k < name.size(); ++k) {
      const auto c = static_cast<unsigned char>(name[k]);
      const bool letter = std::isalpha(c) || c == '_' || c >= 0x80;  // non-ASCII: Unicode letters, as a rule
      if (!(letter || (k > 0 && std::isdigit(c)))) return false;
    }
    return true;
  }

  std::string group_name(char terminator) {
    std::string name;
    while (!at_end() && peek() != terminator) name += s_[i_++];
    if (at_end()) fail("missing " + std::string(1, terminator) + ", unterminated name");
    if (name.empty()) fail("missing group name");
    if (!is_identifier(name)) fail("bad character in group name '" + name + "'");
    ++i_;
    return name;
  }

  void reference(int number) {
    if (std::find(open_groups_.begin(), open_groups_.end(), number) != open_groups_.end()) {
      fail("cannot refer to an open group");
    }
    out_ += "\\g{" + std::to_string(number) + "}";
  }

  void code_point(unsigned long value) {
    char text[16];
    std::snprintf(text, sizeof text, "\\x{%lx}", value);
    out_ += text;
  }

  // \x.., \u...., \U........ (at i_, after the backslash and letter): their code point.
  unsigned long hex_escape(size_t digits, char letter) {
    std::string hex;
    while (hex.size() < digits && is_hex(peek())) hex += s_[i_++];
    if (hex.size() < digits) fail(std::string("incomplete escape \\") + letter + hex);
    const unsigned long value = std::stoul(hex, nullptr, 16);
    if (value > 0x10FFFF) fail(std::string("bad escape \\") + letter + hex);
    return value;
  }

  // Escapes both places share; true when handled.
  bool common_escape(char c) {
    switch (c) {
      case 'a': code_point(0x07); return true;
      case 'f': out_ += "\\f"; return true;
      case 'n': out_ += "\\n"; return true;
      case 'r': out_ += "\\r"; return true;
      case 't': out_ += "\\t"; return true;
      case 'v': code_point(0x0B); return true;
      case '\\': out_ += "\\\\"; return true;
      case 'x': code_point(hex_escape(2, 'x')); return true;
      case 'u': code_point(hex_escape(4, 'u')); return true;
      case 'U': code_point(hex_escape(8, 'U')); return true;
      case 'N': {
        // \N{name}: a character by its Unicode name (not looked up here).
        if (peek() != '{') fail("missing {");
        while (!at_end() && peek() != '}') ++i_;
        if (at_end()) fail("missing }, unterminated name");
        ++i_;
        out_ += 'x';
        return true;
      }
      default:
        return false;
    }
  }

  // An escape outside a class, at its backslash; true when it is an assertion
  // (\A \Z \b \B: nothing to repeat).
  bool parse_escape() {
    const size_t start = i_;
    ++i_;
    if (at_end()) fail("bad escape (end of pattern)");
    const char c = s_[i_++];
    if (common_escape(c)) return false;
    switch (c) {
      case 'A': out_ += "\\A"; return true;
      case 'Z': out_ += "\\z"; return true;
      case 'b': out_ += "\\b"; return true;
      case 'B': out_ += "\\B"; return true;
      case 'd': case 'D': case 's': case 'S': case 'w': case 'W':
        out_ += '\\';
        out_ += c;
        return false;
      default:
        break;
    }
    if (c == '0') {
      std::string octal = "0";
      while (octal.size() < 3 && is_octal(peek())) octal += s_[i_++];
      code_point(std::stoul(octal, nullptr, 8));
      return false;
    }
    if (is_digit(c)) {
      std::string digits(1, c);
      if (is_digit(peek())) {
        digits += s_[i_++];
        if (is_octal(digits[0]) && is_octal(digits[1]) && is_octal(peek())) {
          digits += s_[i_++];
          const unsigned long value = std::stoul(digits, nullptr, 8);
          if (value > 0377) {
            i_ = start;
            fail("octal escape value \\" + digits + " outside of range 0-0o377");
          }
          code_point(value);
          return false;
        }
      }
      const int number = std::stoi(digits);
      if (number > groups_) fail("invalid group reference " + digits);
      reference(number);
      return false;
    }
    if (is_ascii_letter(c)) {
      i_ = start;
      fail(std::string("bad escape \\") + c);
    }
    if (static_cast<unsigned char>(c) < 0x80) {
      literal(c);
    } else {
      out_ += c;  // the first byte of a UTF-8 character; its others follow as they are
    }
    return false;
  }

  void parse_class() {
    const size_t open = i_;
    ++i_;
    out_ += '[';
    if (peek() == '^') {
      out_ += '^';
      ++i_;
    }
    bool first = true;
    for (;;) {
      if (at_end()) {
        i_ = open;
        fail("unterminated character set");
      }
      const char c = s_[i_];
      if (c == ']' && !first) {
        out_ += ']';
        ++i_;
        return;
      }
      first = false;
      if (c == '\\') {
        const size_t start = i_;
        ++i_;
        if (at_end()) {
          i_ = open;
          fail("unterminated character set");
        }
        const char e = s_[i_++];
        if (common_escape(e)) continue;
        if (e == 'b') {
          code_point(0x08);
        } else if (std::strchr("dDsSwW", e) != nullptr) {
          out_ += '\\';
          out_ += e;
        } else if (is_octal(e)) {
          std::string octal(1, e);
          while (octal.size() < 3 && is_octal(peek())) octal += s_[i_++];
          const unsigned long value = std::stoul(octal, nullptr, 8);
          if (value > 0377) {
            i_ = start;
            fail("octal escape value \\" + octal + " outside of range 0-0o377");
          }
          code_point(value);
        } else if (is_digit(e) || is_ascii_letter(e)) {
          i_ = start;
          fail(std::string("bad escape \\") + e);
        } else if (static_cast<unsigned char>(e) < 0x80) {
          out_ += '\\';
          out_ += e;
        } else {
          out_ += e;
        }
        continue;
      }
      if (c == '[' || c == ']') {
        out_ += '\\';  // a literal [ (or a leading ]) in PCRE2 needs its backslash
      }
      out_ += c;
      ++i_;
    }
  }

  const std::string& s_;
  size_t i_ = 0;
  std::string out_;
  bool verbose_ = false;
  int groups_ = 0;
  std::vector<int> open_groups_;
  std::map<std::string, int> named_;
};

std::string where(const std::string& path, const YAML::Mark& mark) {
  return path + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// checker.Rule's constructor, as a list of checks: the problem with one rule, or "".
std::string rule_problem(const YAML::Node& spec) {
  const RulesGrammar& g = rules_grammar();
  const auto has = [&](const char* field) {
    return spec.IsMap() && spec[field].IsDefined();
  };
  if (spec.IsMap()) {
    std::vector<std::string> unknown;
    for (const auto& item : spec) {
      const std::string field = item.first.IsScalar() ? item.first.Scalar() : "?";
      if (!one_of(g.fields, field)) unknown.push_back(field);
    }
    if (!unknown.empty()) {
      return "unknown field(s) " + joined(sorted(unknown), ", ") + "; a rule has " + joined(g.fields, ", ");
    }
  }
  for (const char* required : {"id", "kind", "message"}) {
    if (!has(required) || !is_python_str(spec[required])) return std::string("'") + required + "' must be a string";
  }
  const std::string kind = spec["kind"].Scalar();
  if (!one_of(g.kinds, kind)) return "unknown kind '" + kind + "'; kinds are " + joined(sorted(g.kinds), ", ");
  if (has("scope") && !(is_python_str(spec["scope"]) && one_of(g.scopes, spec["scope"].Scalar()))) {
    return "scope must be one of " + joined(g.scopes, ", ");
  }
  if (has("severity") && !(is_python_str(spec["severity"]) && one_of(g.severities, spec["severity"].Scalar()))) {
    return "severity must be error or warning";
  }
  if (has("options") && !spec["options"].IsMap()) return "options must be a mapping";
  if (has("languages")) {
    const YAML::Node languages = spec["languages"];
    std::vector<std::string> bad;
    if (languages.IsSequence()) {
      for (const YAML::Node& language : languages) {
        if (!is_python_str(language) || !one_of(g.languages, language.Scalar())) {
          bad.push_back(language.IsScalar() ? language.Scalar() : "?");
        }
      }
    } else {
      bad.push_back(languages.IsScalar() ? languages.Scalar() : "?");  // a string is a tuple of letters there
    }
    if (!bad.empty()) return "unknown language(s) " + joined(bad, ", ");
  }
  if (one_of(g.regex_kinds, kind)) {
    std::vector<std::string> patterns;
    for (const char* field : {"match", "allow"}) {
      if (has(field)) flat_strings(spec[field], patterns);
    }
    for (const std::string& pattern : patterns) {
      const std::string problem = python_regex_problem(pattern);
      if (!problem.empty()) return "bad regular expression '" + pattern + "': " + problem;
    }
  }
  return "";
}

}  // namespace

const RulesGrammar& rules_grammar() {
  static const RulesGrammar grammar{
      {"id", "kind", "message", "hint", "languages", "scope", "match", "allow", "options", "severity", "enabled"},
      {"use", "method", "unresolved_call", "module_call", "base_class", "reference_use", "attribute_name", "dunder",
       "dynamic_attribute", "operator", "try", "import", "assign", "mask_index", "rearrange_copy", "forward_output",
       "string_pattern", "native_call", "native_source_unresolved", "modelnew_present", "modelnew_binding",
       "entry_function", "kernel_body", "constructor_signature", "triton_kernel", "triton_launch", "cpp_source",
       "cpp_extern_c", "cpp_load", "cpp_call", "cuda_kernel", "cuda_load", "cuda_call"},
      {"string_pattern"},
      {"module", "candidate", "forward"},
      {"error", "warning"},
      {std::begin(kLanguages), std::end(kLanguages)}};
  return grammar;
}

std::string python_regex_problem(const std::string& pattern) {
  std::string pcre;
  if (std::string problem = PythonPattern(pattern).translate(pcre); !problem.empty()) return problem;
  int code = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* compiled = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pcre.data()), pcre.size(), PCRE2_UTF, &code,
                                       &offset, nullptr);
  if (compiled != nullptr) {
    pcre2_code_free(compiled);
    return "";
  }
  PCRE2_UCHAR message[256];
  pcre2_get_error_message(code, message, sizeof message);
  return reinterpret_cast<const char*>(message);
}

void check_rules_file(const std::string& path) {
  std::string why;
  const std::optional<std::string> text = read_bounded_file(path, kMaxRulesFileBytes, why);
  if (!text) throw std::invalid_argument("cannot read rules file " + path + ": " + why);
  if (const std::optional<size_t> bad = invalid_utf8_at(*text)) {
    throw std::invalid_argument("rules file " + path + " is not UTF-8 text (byte " + std::to_string(*bad) +
                                " is not); the harness reads it as UTF-8");
  }
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(where(path, e.mark) + ": the rules file is not valid YAML: " + e.msg);
  }
  YAML::Node rules;
  if (root.IsMap()) {
    for (const auto& item : root) {
      if (item.first.IsScalar() && item.first.Scalar() == "rules") rules = item.second;  // the last one, as PyYAML
    }
  }
  if (!rules.IsDefined() || !rules.IsSequence()) {
    throw std::invalid_argument("rules file " + path + " must be a mapping with a 'rules' list");
  }
  size_t index = 0;
  for (const YAML::Node& spec : rules) {
    ++index;
    const std::string problem = rule_problem(spec);
    if (problem.empty()) continue;
    std::string id;
    if (spec.IsMap() && spec["id"].IsDefined() && spec["id"].IsScalar()) id = " (" + spec["id"].Scalar() + ")";
    throw std::invalid_argument(where(path, spec.Mark()) + ": rule #" + std::to_string(index) + id + ": " + problem);
  }
}

}  // namespace kforge::eval
