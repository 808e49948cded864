// Registers a stage kind whose name the demo plugin already uses.
#include <kforge/sdk.hpp>

class AnotherNoop : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "demo.noop";
  static constexpr const char* kDoc = "Clashes with the demo plugin's demo.noop.";
  explicit AnotherNoop(const kforge::sdk::Config&) {}
  void process(kforge::sdk::Job& job) override { job.pass(); }
};

KFORGE_PLUGIN("duplicate", "1.0.0", AnotherNoop)
