// kforge plugin SDK glue: how Param::bind fills a field of an options struct from a validated
// parameter (included by kforge/sdk.hpp; nothing here is for plugins to call).
#pragma once

#include <kforge/config.hpp>

#include <chrono>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kforge::sdk {

// How a field of type T is read from a parameter: `static bool takes(kf_param_type)` says which
// declared types it can hold, `static T read(const Config&, const char* name, kf_param_type)`
// converts the validated value (throw to refuse one, saying why). Specialized below for the
// types the SDK knows; a plugin specializes it for a type of its own (a program looked up on
// PATH, a parsed rule).
template <typename T>
struct ParamField;

template <>
struct ParamField<std::string> {  // STRING as written, OBJECT as its JSON text
  static bool takes(kf_param_type type) { return type == KF_PARAM_STRING || type == KF_PARAM_OBJECT; }
  static std::string read(const Config& cfg, const char* name, kf_param_type type) {
    return type == KF_PARAM_OBJECT ? cfg.json(name) : cfg.string(name);
  }
};

template <>
struct ParamField<bool> {
  static bool takes(kf_param_type type) { return type == KF_PARAM_BOOL; }
  static bool read(const Config& cfg, const char* name, kf_param_type) { return cfg.boolean(name); }
};

template <std::integral T>
  requires(!std::same_as<T, bool>)
struct ParamField<T> {
  static bool takes(kf_param_type type) { return type == KF_PARAM_INT; }
  static T read(const Config& cfg, const char* name, kf_param_type) {
    const int64_t value = cfg.integer(name);
    if (!std::in_range<T>(value)) {
      // Declare the range (Param::at_least/at_most) to have the host refuse such a value at
      // its place in the pipeline file instead.
      throw std::invalid_argument("parameter '" + std::string(name) + "' is " + std::to_string(value) +
                                  ", which does not fit this stage's field (from " +
                                  std::to_string(std::numeric_limits<T>::min()) + " to " +
                                  std::to_string(std::numeric_limits<T>::max()) + ")");
    }
    return static_cast<T>(value);
  }
};

template <std::floating_point T>
struct ParamField<T> {  // FLOAT, or an INT read as a number
  static bool takes(kf_param_type type) { return type == KF_PARAM_FLOAT || type == KF_PARAM_INT; }
  static T read(const Config& cfg, const char* name, kf_param_type) { return static_cast<T>(cfg.number(name)); }
};

// A DURATION (the host hands over seconds). An integral count is rounded up to its unit, so
// that a positive limit stays positive (0.2s in std::chrono::seconds is 1s); keep the
// fractions with std::chrono::duration<double> (kforge::sdk::Seconds) or milliseconds.
template <typename Rep, typename Period>
struct ParamField<std::chrono::duration<Rep, Period>> {
  using Duration = std::chrono::duration<Rep, Period>;
  static bool takes(kf_param_type type) { return type == KF_PARAM_DURATION; }
  static Duration read(const Config& cfg, const char* name, kf_param_type) {
    const std::chrono::duration<double> seconds(cfg.number(name));
    if constexpr (std::is_floating_point_v<Rep>) {
      return std::chrono::duration_cast<Duration>(seconds);
    } else {
      return std::chrono::ceil<Duration>(seconds);
    }
  }
};

template <>
struct ParamField<std::vector<std::string>> {
  static bool takes(kf_param_type type) { return type == KF_PARAM_STRING_LIST; }
  static std::vector<std::string> read(const Config& cfg, const char* name, kf_param_type) { return cfg.list(name); }
};

// A STRING that names a file or directory: relative to the pipeline file's directory, as
// users write them; empty stays empty (none).
template <>
struct ParamField<std::filesystem::path> {
  static bool takes(kf_param_type type) { return type == KF_PARAM_STRING; }
  static std::filesystem::path read(const Config& cfg, const char* name, kf_param_type) { return cfg.path(name); }
};

// An optional parameter without a default: empty when the pipeline gives none.
template <typename T>
struct ParamField<std::optional<T>> {
  static bool takes(kf_param_type type) { return ParamField<T>::takes(type); }
  static std::optional<T> read(const Config& cfg, const char* name, kf_param_type type) {
    return ParamField<T>::read(cfg, name, type);
  }
};

namespace detail {

// One address per options struct: which struct a binding writes into.
template <typename Options>
inline constexpr char options_tag = 0;

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

// A parameter's binding to a field of an options struct (Param::bind).
struct Binding {
  const void* options = nullptr;  // options_tag of the struct; nullptr: not bound
  std::string problem;            // the declared type does not fit the field: said at create
  std::function<void(void* options, const Config& cfg)> fill;
};

// `required`: a configuration without the parameter's value did not come through the host's
// checks, and is refused. Any other parameter has a value whenever the host validated the
// configuration (its default at least); one left out (a plan a test built by hand) leaves
// the field as initialized, or empty when it is a std::optional.
template <typename Options, typename Field, typename Owner>
Binding bind_field(Field Owner::*field, const std::string& name, kf_param_type type, bool required) {
  static_assert(std::is_base_of_v<Owner, Options>, "Param::bind<Options>: the field is not a member of Options");
  static_assert(requires { ParamField<Field>::takes(type); },
                "Param::bind: the field's type has no kforge::sdk::ParamField (string, bool, an integer, a floating "
                "point number, std::chrono::duration, std::vector<std::string>, std::filesystem::path, "
                "std::optional of one, or specialize ParamField for it)");
  Binding binding;
  binding.options = &options_tag<Options>;
  if (!ParamField<Field>::takes(type)) {
    binding.problem = "parameter '" + name + "' is declared with a type its options field cannot hold (kf_param_type " +
                      std::to_string(static_cast<int>(type)) + "): bind it to a field of the declared type";
  }
  binding.fill = [field, name, type, required](void* options, const Config& cfg) {
    Options& target = *static_cast<Options*>(options);
    if (required || cfg.has(name.c_str())) {
      target.*field = ParamField<Field>::read(cfg, name.c_str(), type);
    } else if constexpr (IsOptional<Field>::value) {
      target.*field = std::nullopt;
    }
  };
  return binding;
}

}  // namespace detail
}  // namespace kforge::sdk
