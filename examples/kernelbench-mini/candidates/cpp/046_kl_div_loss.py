import ctypes

import torch
import kforge_cpp

# sum(t * (log t - log p)) / rows; a zero target contributes nothing (0 * log 0 = 0).
cpp_source = r'''
#include <cmath>
#include <cstdint>

extern "C" void kl_div_batchmean(const float* predictions, const float* targets, float* out,
                                 int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  double total = 0.0;
  #pragma omp parallel for reduction(+ : total)
  for (int64_t i = 0; i < n; ++i) {
    const double t = targets[i];
    if (t > 0.0) total += t * (std::log(t) - std::log(static_cast<double>(predictions[i])));
  }
  out[0] = static_cast<float>(total / rows);
}
'''


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lib = kforge_cpp.load(cpp_source)

    def forward(self, predictions, targets):
        predictions = predictions.contiguous()
        targets = targets.contiguous()
        out = torch.empty((), dtype=predictions.dtype, device=predictions.device)
        self.lib.kl_div_batchmean(kforge_cpp.ptr(predictions), kforge_cpp.ptr(targets), kforge_cpp.ptr(out),
                                  ctypes.c_int64(predictions.shape[0]), ctypes.c_int64(predictions.shape[1]))
        return out
