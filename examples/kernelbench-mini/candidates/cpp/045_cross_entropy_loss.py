import ctypes

import torch
import kforge_cpp

# loss_r = logsumexp(logits[r]) - logits[r, target[r]]; the mean over rows is a 0-d tensor.
cpp_source = r'''
#include <cmath>
#include <cstdint>

extern "C" void cross_entropy_mean(const float* logits, const int64_t* targets, float* out,
                                   int64_t rows, int64_t classes) {
  double total = 0.0;
  #pragma omp parallel for reduction(+ : total)
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = logits + r * classes;
    float row_max = row[0];
    for (int64_t c = 1; c < classes; ++c) row_max = row[c] > row_max ? row[c] : row_max;
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(row[c]) - row_max);
    total += row_max + std::log(sum) - row[targets[r]];
  }
  out[0] = static_cast<float>(total / rows);
}
'''


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, logits, targets):
        logits = logits.contiguous()
        targets = targets.contiguous()
        out = torch.empty((), dtype=logits.dtype, device=logits.device)
        self.lib.cross_entropy_mean(kforge_cpp.ptr(logits), kforge_cpp.ptr(targets), kforge_cpp.ptr(out),
                                    ctypes.c_int64(logits.shape[0]), ctypes.c_int64(logits.shape[1]))
        return out
