// The smallest useful stage: checks that the candidate's code greets politely.
#include <kforge/sdk.hpp>

#include <string>

class Greet : public kforge::sdk::Stage {
 public:
  // What the stage is configured with: the SDK fills it from the pipeline's `with:`, each
  // field from the parameter bound to it, after kforge has checked the values.
  struct Options {
    std::string greeting;
  };
  static constexpr const char* kName = "hello.greet";
  static constexpr const char* kDoc = "Writes a greeting into the job and passes.";
  static std::vector<kforge::sdk::Param> params() {
    return {kforge::sdk::Param{"greeting", KF_PARAM_STRING, "hello", false, "The word to greet the task with."}.bind(
        &Options::greeting)};
  }

  explicit Greet(const Options& options) : greeting_(options.greeting) {}

  void process(kforge::sdk::Job& job) override {
    job.set("hello.text", greeting_ + ", " + job.get_or(KF_KEY_TASK_ID, "nobody"));
    job.metric("letters", static_cast<double>(greeting_.size()));
    job.pass();
  }

 private:
  std::string greeting_;
};

KFORGE_PLUGIN("hello", "1.0.0", Greet)
