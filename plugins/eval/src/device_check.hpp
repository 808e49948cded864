// Whether a device a stage names (cuda:N, npu:N) can be used from this host, asked when the
// run starts: a run on a host without it refuses at once (exit 2, saying what is missing)
// instead of turning every job into a harness_error.
#pragma once

#include <string>

namespace kforge::eval {

// Throws std::runtime_error saying what is missing and what to do when `device` cannot be
// used by `python` with the harness in `harness_dir`: the harness server's own readiness
// check (torch built for the device, its runtime importable), then whether torch sees the
// device's index. Asked once per process per interpreter and device; `cpu` is never asked.
void check_device_usable(const std::string& python, const std::string& harness_dir, const std::string& device);

}  // namespace kforge::eval
