// A shared object that is not a kforge plugin: it exports no kforge_plugin_entry.
extern "C" __attribute__((visibility("default"))) int some_other_symbol() { return 42; }
