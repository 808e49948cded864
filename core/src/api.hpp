// KFORGE_API marks what libkforge.so exports. The library is built with hidden symbols, so
// everything else (the loader's internals, the store's SQL, yaml-cpp, fmt, nlohmann) stays
// inside it. Its two clients, the kforge command and libkforge_testing.so, use all that is
// marked (core/tests/exports_test.sh); exceptions they catch by type are marked too.
#pragma once

#include <kforge/abi.h>

#define KFORGE_API KF_EXPORT
