// The smallest useful stage: checks that the candidate's code greets politely.
#include <kforge/sdk.hpp>

#include <string>

class Greet : public kforge::sdk::Stage {
 public:
  static constexpr const char* kName = "hello.greet";
  static constexpr const char* kDoc = "Writes a greeting into the job and passes.";
  static std::vector<kforge::sdk::Param> params() {
    return {{"greeting", KF_PARAM_STRING, "hello", false, "The word to greet the task with."}};
  }

  explicit Greet(const kforge::sdk::Config& cfg) : greeting_(cfg.string("greeting")) {}

  void process(kforge::sdk::Job& job) override {
    job.set("hello.text", greeting_ + ", " + job.get_or(KF_KEY_TASK_ID, "nobody"));
    job.metric("letters", static_cast<double>(greeting_.size()));
    job.pass();
  }

 private:
  std::string greeting_;
};

KFORGE_PLUGIN("hello", "1.0.0", Greet)
