// The run store's one exception type.
#pragma once

#include <stdexcept>

namespace kforge {

// SQLite failed; the message says which database and what to do.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace kforge
