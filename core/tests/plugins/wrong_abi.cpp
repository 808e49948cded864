// A plugin built for a future ABI version the host does not know.
#include <kforge/abi.h>

extern "C" KF_EXPORT const kf_plugin_descriptor* kforge_plugin_entry(void) {
  static const kf_plugin_descriptor descriptor = {
      KF_ABI_VERSION + 41, sizeof(kf_plugin_descriptor), "from-the-future", "9.0.0", nullptr, 0, nullptr, 0};
  return &descriptor;
}
