// kforge plugin SDK glue: the host's function table as the plugin received it, and how an
// entry point's exceptions become the C ABI's status and error text (included by
// kforge/sdk.hpp; nothing here is for plugins to call).
#pragma once

#include <kforge/abi.h>

#include <cstddef>
#include <cstdio>
#include <exception>

namespace kforge::sdk {
namespace detail {
inline const kf_host_api* g_host = nullptr;

inline void write_error(char* err, size_t err_size, const char* what) {
  if (err == nullptr || err_size == 0) return;
  std::snprintf(err, err_size, "%s", what);
}

// Runs an entry point's body for the host: KF_OK, or KF_ERROR with the exception's text
// in `err` (`unknown` for an exception that is not a std::exception). No exception
// crosses the C ABI.
template <typename Body>
kf_status guarded(char* err, size_t err_size, const char* unknown, Body&& body) noexcept {
  try {
    body();
    return KF_OK;
  } catch (const std::exception& e) {
    write_error(err, err_size, e.what());
  } catch (...) {
    write_error(err, err_size, unknown);
  }
  return KF_ERROR;
}

}  // namespace detail
}  // namespace kforge::sdk
