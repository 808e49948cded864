"""Honest: imports standard-library modules the harness has not loaded (at import and inside forward) for plain bookkeeping."""
import colorsys
import fractions

import torch

_HALF = float(fractions.Fraction(1, 2))
_GREY = colorsys.rgb_to_hsv(0.5, 0.5, 0.5)[2]


class ModelNew(torch.nn.Module):
    def forward(self, x):
        import statistics  # noqa: F401 - a lazy import inside the call
        return torch.relu(x) * (2 * _HALF) * (2 * _GREY)
