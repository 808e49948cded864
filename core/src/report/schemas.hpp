// The JSON Schemas of kforge's output files, compiled in from docs/schemas/*.schema.json
// (core/CMakeLists.txt generates the definitions), for `kforge schema --results` etc.
#pragma once

#include "api.hpp"

namespace kforge {

enum class OutputSchema { Results, Report, Records };

// The schema's text, exactly as the file under docs/schemas holds it.
KFORGE_API const char* output_schema(OutputSchema which);

}  // namespace kforge
