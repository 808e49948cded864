// kforge plugin SDK: the validated parameters of one stage or source, as the host hands them
// over (included by kforge/sdk.hpp). A stage with an options struct never reads them by
// name: Param::bind fills the struct from them (kforge/detail/params.hpp).
#pragma once

#include <kforge/abi.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kforge::sdk {

namespace detail {
inline void check(kf_status status, const char* what, const char* name) {
  if (status != KF_OK) {
    throw std::runtime_error(std::string(what) + " '" + name + "' is not available");
  }
}
}  // namespace detail

// The validated parameters of one stage or source, by name. Every declared parameter has a
// value (the pipeline's or the default) unless it is optional with no default: has() tells.
// A class with an options struct gets them there instead (Param::bind); Config is what a
// ParamField of a plugin's own type reads from, and what a constructor from Config (the
// older way, still accepted) is handed.
class Config {
 public:
  Config(const kf_host_api* host, const kf_config* cfg) : host_(host), cfg_(cfg) {}

  bool has(const char* name) const {
    const char* out = nullptr;
    size_t len = 0;
    return host_->config_json(cfg_, name, &out, &len) == KF_OK;
  }
  std::string string(const char* name) const {
    const char* out = nullptr;
    size_t len = 0;
    detail::check(host_->config_string(cfg_, name, &out, &len), "string parameter", name);
    return std::string(out, len);
  }
  int64_t integer(const char* name) const {
    int64_t out = 0;
    detail::check(host_->config_int(cfg_, name, &out), "integer parameter", name);
    return out;
  }
  double number(const char* name) const {
    double out = 0;
    detail::check(host_->config_float(cfg_, name, &out), "number parameter", name);
    return out;
  }
  bool boolean(const char* name) const {
    int out = 0;
    detail::check(host_->config_bool(cfg_, name, &out), "boolean parameter", name);
    return out != 0;
  }
  std::vector<std::string> list(const char* name) const {
    size_t n = 0;
    detail::check(host_->config_list_size(cfg_, name, &n), "list parameter", name);
    std::vector<std::string> items;
    items.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const char* out = nullptr;
      size_t len = 0;
      detail::check(host_->config_list_item(cfg_, name, i, &out, &len), "list parameter", name);
      items.emplace_back(out, len);
    }
    return items;
  }
  std::string json(const char* name) const {
    const char* out = nullptr;
    size_t len = 0;
    detail::check(host_->config_json(cfg_, name, &out, &len), "parameter", name);
    return std::string(out, len);
  }
  // Directory of the pipeline file; relative paths in parameters are relative to it.
  std::string base_dir() const { return host_->config_base_dir(cfg_); }
  // A path parameter resolved against base_dir() when relative.
  std::string path(const char* name) const {
    std::string value = string(name);
    if (value.empty() || value.front() == '/') return value;
    return base_dir() + "/" + value;
  }

 private:
  const kf_host_api* host_;
  const kf_config* cfg_;
};

// The directory of the pipeline file that configured a stage or source, for relative paths
// that are not parameters themselves (a default made from another parameter): resolved as
// path parameters are. A class with Options takes it as its constructor's second argument.
class PipelineDir {
 public:
  explicit PipelineDir(std::filesystem::path dir) : dir_(std::move(dir)) {}
  const std::filesystem::path& path() const { return dir_; }
  // `relative` against the directory; an absolute or empty path as it is.
  std::filesystem::path resolve(const std::filesystem::path& relative) const {
    return relative.empty() || relative.is_absolute() ? relative : dir_ / relative;
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace kforge::sdk
