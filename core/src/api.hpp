// KFORGE_API marks what libkforge.so exports. The library is built with hidden symbols, so
// everything else (the loader's internals, the store's SQL, yaml-cpp, fmt, nlohmann) stays
// inside it; the kforge command and the plugin test kit (kforge/testing.hpp) use only what
// is marked. Exceptions that cross into the command are marked too, so `catch` sees them.
#pragma once

#include <kforge/abi.h>

#define KFORGE_API KF_EXPORT
