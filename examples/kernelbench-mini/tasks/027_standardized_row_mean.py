# expect: task_error (its output is near-constant whatever the input: a comparison proves nothing)
import torch
import torch.nn as nn


class Model(nn.Module):
    """Standardizes each row (zero mean, unit standard deviation), then takes the row mean.

    The exact answer is 0 for every row, so the reference output is near-constant (rounding
    noise around 1e-8) whatever the input, scaled or shifted: a kernel that returns zeros
    would match it, so no comparison can judge a kernel for it. The harness says so as a
    task_error (tests use this task to check that such a pass never happens).
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        centered = x - x.mean(dim=1, keepdim=True)
        standardized = centered / centered.std(dim=1, keepdim=True)
        return standardized.mean(dim=1)


batch_size = 4096
dim = 65536


def get_inputs():
    return [torch.randn(batch_size, dim) * 3.0 + 1.0]


def get_init_inputs():
    return []
