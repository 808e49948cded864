import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer with int8 weights and one float scale per output row (weight-only quantization).

    y = x @ (W_q * scale[:, None])^T + b
    """

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.register_buffer(
            "weight_q", torch.randint(-127, 128, (out_features, in_features), dtype=torch.int8))
        self.register_buffer("weight_scale", torch.rand(out_features) * 0.01 + 0.001)
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.weight_q.to(torch.float32) * self.weight_scale.unsqueeze(1)
        return torch.matmul(x, weight.T) + self.bias


batch_size = 1024
in_features = 8192
out_features = 8192


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
