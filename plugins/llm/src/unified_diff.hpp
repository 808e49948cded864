// A unified diff (as `diff -u` prints it) between two versions of a candidate, stored
// with every fix round so a reader sees what the FixAgent changed.
#pragma once

#include <string>
#include <string_view>

namespace kforge::llm {

// Empty when the texts are equal. Lines are compared whole; a last line without a
// newline is marked "\ No newline at end of file" as GNU diff does. The alignment is a
// longest common subsequence of lines (after the common head and tail are set aside);
// very large differing middles (over ~16M line pairs) are shown as removed-then-added.
std::string unified_diff(std::string_view before, std::string_view after,
                         std::string_view before_label, std::string_view after_label,
                         int context = 3);

}  // namespace kforge::llm
