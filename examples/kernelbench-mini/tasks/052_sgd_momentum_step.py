import torch
import torch.nn as nn


class Model(nn.Module):
    """One SGD step with momentum and weight decay, out of place: returns the new parameters.

    d = g + wd * p;  buf = mu * buf + d;  p_new = p - lr * buf
    """

    def __init__(self, lr: float, momentum: float, weight_decay: float):
        super().__init__()
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay

    def forward(self, param, grad, momentum_buffer):
        d = grad + param * self.weight_decay
        buf = momentum_buffer * self.momentum + d
        return param - buf * self.lr


num_params = 67108864
lr = 0.01
momentum = 0.9
weight_decay = 1e-4


def get_inputs():
    return [torch.randn(num_params), torch.randn(num_params), torch.randn(num_params)]


def get_init_inputs():
    return [lr, momentum, weight_decay]
