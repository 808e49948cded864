"""An honest candidate for redteam8/relu_and_empty: the ReLU, and the empty second output
(torch.empty's data_ptr() of zero elements is 0). What the reference itself returns."""
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0), x[:0] * 2.0
