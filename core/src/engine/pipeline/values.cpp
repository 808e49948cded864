#include "engine/pipeline/values.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "engine/param_types.hpp"
#include "engine/pipeline/loader.hpp"
#include "engine/pipeline/scalars.hpp"
#include "engine/registry.hpp"

namespace kforge::loader {

namespace {

// What one mapping parameter may expand to. YAML aliases share nodes, so a few hundred
// bytes of anchors ("billion laughs") name 10^10 values: the conversion counts what it
// builds and refuses the value before it fills memory.
struct ExpansionBudget {
  size_t values = 0;
  size_t bytes = 0;
  bool exceeded = false;
  bool too_deep = false;  // nests more than kMaxValueNesting levels
  bool spend(size_t text_bytes) {
    ++values;
    bytes += text_bytes;
    exceeded = exceeded || values > kMaxExpandedValues || bytes > kMaxExpandedBytes;
    return !exceeded;
  }
  bool stopped() const { return exceeded || too_deep; }
};

std::optional<Json> to_json(const YAML::Node& node, const std::string& subject, ValueSource& source,
                            ExpansionBudget& budget, size_t depth = 0) {
  if (!node.IsScalar() && !budget.spend(0)) return std::nullopt;
  if (depth > kMaxValueNesting) {
    // An alias of the mapping it sits in never ends, and a chain of anchors each holding
    // the one before nests as deep as it is long: either would overflow the stack here.
    budget.too_deep = true;
    return std::nullopt;
  }
  switch (node.Type()) {
    case YAML::NodeType::Scalar: {
      auto text = source.text(node);
      if (!text) return std::nullopt;
      if (!budget.spend(text->size())) return std::nullopt;
      return is_quoted(node) ? Json(*text) : plain_scalar_json(*text);
    }
    case YAML::NodeType::Sequence: {
      Json array = Json::array();
      bool ok = true;
      for (const YAML::Node& item : node) {
        auto value = to_json(item, subject, source, budget, depth + 1);
        ok = ok && value.has_value();
        if (budget.stopped()) return std::nullopt;
        if (value) array.push_back(std::move(*value));
      }
      return ok ? std::optional<Json>(std::move(array)) : std::nullopt;
    }
    case YAML::NodeType::Map: {
      Json object = Json::object();
      bool ok = true;
      for (auto it = node.begin(); it != node.end(); ++it) {
        if (!it->first.IsScalar()) {
          source.error(it->first, fmt::format("{}: mapping keys must be plain names", subject));
          ok = false;
          continue;
        }
        const std::string& key = it->first.Scalar();
        if (object.contains(key)) {
          source.error(it->first, fmt::format("{}: duplicate key '{}'", subject, key));
          ok = false;
          continue;
        }
        auto value = to_json(it->second, subject, source, budget, depth + 1);
        ok = ok && value.has_value();
        if (budget.stopped()) return std::nullopt;
        if (value) object[key] = std::move(*value);
      }
      return ok ? std::optional<Json>(std::move(object)) : std::nullopt;
    }
    default:
      return Json(nullptr);
  }
}

}  // namespace

// Converts a YAML value to a parameter of `type`, by the rules docs/pipelines.md gives.
std::optional<ParamValue> convert(kf_param_type type, const YAML::Node& value,
                                  const std::string& subject, ValueSource& source) {
  const ParamType* row = param_type(type);
  if (row == nullptr) {  // the registry refuses such a plugin: only a caller's own bug gets here
    source.error(value, fmt::format("{} has a type this kforge does not know ({})", subject, static_cast<int>(type)));
    return std::nullopt;
  }
  if (!value.IsDefined() || value.IsNull()) {
    source.error(value,
                 type == KF_PARAM_STRING
                     ? fmt::format("{} has no value (write \"\" for an empty string)", subject)
                     : fmt::format("{} has no value: expected {}", subject, row->expected));
    return std::nullopt;
  }
  ParamValue out;
  out.type = type;
  if (row->shape == ParamShape::StringList) {
    if (!value.IsSequence()) {
      source.error(value, value.IsScalar()
                              ? fmt::format("{} must be a list of strings, got a single value; "
                                            "write [x] for a list of one",
                                            subject)
                              : fmt::format("{} must be a list of strings, got {}", subject,
                                            shape_of(value)));
      return std::nullopt;
    }
    Json array = Json::array();
    bool ok = true;
    for (const YAML::Node& item : value) {
      if (!item.IsScalar()) {
        source.error(
            item, fmt::format("{}: each item must be a string, got {}", subject, shape_of(item)));
        ok = false;
        continue;
      }
      auto text = source.text(item);
      if (!text) {
        ok = false;
        continue;
      }
      out.items.push_back(*text);
      array.push_back(*text);
    }
    if (!ok) return std::nullopt;
    out.json = json_text(array);
    return out;
  }
  if (row->shape == ParamShape::Mapping) {
    if (!value.IsMap()) {
      source.error(value, fmt::format("{} must be a mapping (key: value, ...), got {}", subject,
                                      shape_of(value)));
      return std::nullopt;
    }
    ExpansionBudget budget;
    auto json = to_json(value, subject, source, budget);
    if (budget.too_deep) {
      source.error(value, fmt::format("{} nests more than {} levels deep (a YAML alias inside the mapping it names, "
                                      "or a chain of anchors each holding the one before, nests without end); "
                                      "write the mapping out flat",
                                      subject, kMaxValueNesting));
      return std::nullopt;
    }
    if (budget.exceeded) {
      source.error(value, fmt::format("{} expands to more than {} values or {} MiB of text (YAML aliases repeat "
                                      "what their anchor names, so a few lines can name billions of values); "
                                      "write the mapping out without nested aliases",
                                      subject, kMaxExpandedValues, kMaxExpandedBytes >> 20));
      return std::nullopt;
    }
    if (!json) return std::nullopt;
    out.json = json_text(*json);
    return out;
  }
  if (!value.IsScalar()) {
    source.error(value,
                 fmt::format("{} must be {}, got {}", subject, row->expected, shape_of(value)));
    return std::nullopt;
  }
  auto text = source.text(value);
  if (!text) return std::nullopt;
  if (auto problem = row->read(*text, subject, out)) {
    source.error(value, *problem);
    return std::nullopt;
  }
  return out;
}

std::optional<YAML::Node> parse_default(const ParamSpec& spec, std::string& problem) {
  if (spec.type == KF_PARAM_STRING) return YAML::Node(*spec.default_value);
  try {
    return YAML::Load(*spec.default_value);
  } catch (const YAML::Exception& e) {
    problem = e.msg;
    return std::nullopt;
  }
}

std::optional<std::string> violated_constraint(const ParamSpec& spec, const ParamValue& value,
                                               const std::string& subject) {
  auto not_a_choice = [&](const std::string& text) -> std::optional<std::string> {
    if (spec.choices.empty() || contains(spec.choices, text)) return std::nullopt;
    auto guess = closest(text, spec.choices);
    return fmt::format("{} must be {}, got '{}'{}", subject, alternatives(spec.choices), text,
                       guess ? fmt::format("; did you mean '{}'?", *guess) : "");
  };
  const ParamType* row = param_type(spec.type);
  if (row == nullptr) return std::nullopt;
  if (row->takes_choices) {
    if (row->shape == ParamShape::StringList) {
      for (const std::string& item : value.items) {
        if (auto problem = not_a_choice(item)) return problem;
      }
    } else if (auto problem = not_a_choice(value.text)) {
      return problem;
    }
  }
  if (!row->takes_range) return std::nullopt;
  const double x = value.number;
  const bool min_exclusive = (spec.range & KF_RANGE_MIN_EXCLUSIVE) != 0;
  const bool max_exclusive = (spec.range & KF_RANGE_MAX_EXCLUSIVE) != 0;
  if ((spec.range & KF_RANGE_MIN) && (min_exclusive ? x <= spec.min : x < spec.min)) {
    return fmt::format("{} must be {} {:g}{}, got {}", subject, min_exclusive ? "greater than" : "at least", spec.min,
                       row->unit, value.text);
  }
  if ((spec.range & KF_RANGE_MAX) && (max_exclusive ? x >= spec.max : x > spec.max)) {
    return fmt::format("{} must be {} {:g}{}, got {}", subject, max_exclusive ? "less than" : "at most", spec.max,
                       row->unit, value.text);
  }
  return std::nullopt;
}

}  // namespace kforge::loader

namespace kforge::detail {

std::optional<std::string> default_json(const ParamSpec& spec) {
  if (!spec.default_value) return std::nullopt;
  // A throwaway sink: a default that does not convert is simply left out of the schema;
  // loading a pipeline that uses the kind reports it.
  class Quiet : public loader::ValueSource {
   public:
    std::optional<std::string> text(const YAML::Node& scalar) override { return scalar.Scalar(); }
    void error(const YAML::Node&, const std::string&) override {}
  } quiet;
  std::string problem;
  auto node = loader::parse_default(spec, problem);
  if (!node) return std::nullopt;
  auto value = loader::convert(spec.type, *node, spec.name, quiet);
  if (!value) return std::nullopt;
  return value->json;
}

}  // namespace kforge::detail
