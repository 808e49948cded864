// The automatic complexity scorer: for tasks whose manifest says nothing, a score and a
// class C1..C4 (seed 000's scale: C1 elementwise <= 2.0, C2 reduction 2-3, C3 matmul 3-4,
// C4 complex/conv >= 4) and a category guess, read from the reference source alone.
//
// How it scores (README.md documents it for users): the calls (and `@`) inside class
// Model (in __init__ only module constructions such as nn.Conv2d) are matched against a
// table of PyTorch/NumPy operator names, each with a base score: elementwise 1.5,
// indexing/data movement 1.75, reductions/softmax/norms/pooling 2.5, resampling
// (interpolate, grid_sample) 3.0, matmul/bmm/linear/einsum 3.5, losses 4.0,
// convolutions/attention/recurrent 4.5. The task's name adds a loss, convolution or
// attention it mentions (NumPy references spell those out in arithmetic). A matmul
// together with a softmax counts as attention. The score is the highest base plus 0.25
// for every further distinct operator, at most +1.0, where elementwise and indexing
// operators count only beside a matmul or heavier (a fused epilogue); a source with no
// known operator scores 1.5 (plain arithmetic).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kforge::kernelbench {

struct ComplexityEstimate {
  double score = 1.5;
  std::string complexity;          // C1..C4
  std::string category;            // one of the 15 KernelBenchX categories
  std::vector<std::string> ops;    // the operators it recognised, in order of appearance
};

// `task_name`: the task's id or file stem, for the name hints.
ComplexityEstimate estimate_complexity(std::string_view python_source, const std::string& task_name = "");

// C1 for score <= 2.0, C2 below 3.0, C3 below 4.0, C4 from 4.0 on.
std::string complexity_class(double score);

}  // namespace kforge::kernelbench
