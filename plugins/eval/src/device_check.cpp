#include "device_check.hpp"

#include "process.hpp"
#include "shared_probe.hpp"

#include <stdexcept>

namespace kforge::eval {
namespace {

// Importing torch and initialising a CUDA driver take seconds on a loaded machine.
constexpr double kProbeSeconds = 120;

// Runs in a process of its own, so initialising the device here (device_count) cannot
// break the server's forked children. The readiness check is the harness's, so the run
// start and the server refuse for the same reasons, in the same words.
constexpr const char* kProbe = R"py(import sys
from kforge_harness.devices import Device
import torch
device = Device(sys.argv[1])
why = device.readiness_error(torch)
if why is None and device.is_accelerator:
    count = device.module(torch).device_count()
    if device.index >= count:
        why = (f"{device.name} does not exist: torch {torch.__version__} in {sys.executable} "
               f"sees {count} {device.type} device(s) (no device, no driver, or hidden by "
               "CUDA_VISIBLE_DEVICES/ASCEND_RT_VISIBLE_DEVICES)")
print("KFORGE_DEVICE " + (why or "ready"))
)py";

}  // namespace

void check_device_usable(const std::string& python, const std::string& harness_dir, const std::string& device) {
  if (device == "cpu") return;
  static SharedProbe<std::string> probes;
  const auto problem = probes.get(python + '\n' + harness_dir + '\n' + device, ProbeClock::time_point::max(),
                                  [python, harness_dir, device](const std::function<bool()>& stopping) {
    SharedProbe<std::string>::Found found;
    RunLimits limits = RunLimits::within(kProbeSeconds);
    limits.cancelled = stopping;
    CommandResult result;
    try {
      result = run_command({{python, "-c", kProbe, device}, {{"PYTHONPATH", harness_dir}}, {}}, limits);
    } catch (const SpawnError& e) {
      found.value = "cannot ask " + python + " about device " + device + ": " + e.what();
      return found;
    }
    const size_t marker = result.output.rfind("KFORGE_DEVICE ");
    if (result.ok() && marker != std::string::npos) {
      std::string answer = result.output.substr(marker + 14);
      while (!answer.empty() && (answer.back() == '\n' || answer.back() == '\r')) answer.pop_back();
      found.value = answer == "ready" ? "" : answer;
      found.settled = true;
    } else {
      found.value = python + " could not tell whether device " + device + " is usable (" + result.describe() +
                    "):\n" + result.output.substr(0, 2000);
      found.settled = result.exited();
    }
    return found;
  });
  if (problem && !problem->empty()) {
    throw std::runtime_error("device " + device + " is not usable on this host: " + *problem +
                             "; or run on the CPU (--set device=cpu where the pipeline has that variable, or "
                             "the stage parameter device: cpu, where its candidates can run on the CPU)");
  }
}

}  // namespace kforge::eval
