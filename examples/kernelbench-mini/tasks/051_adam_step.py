import torch
import torch.nn as nn


class Model(nn.Module):
    """One Adam update, written out of place: returns the new parameters.

    m = b1 * m + (1 - b1) * g;  v = b2 * v + (1 - b2) * g^2
    p_new = p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
    The moment buffers are inputs and are not updated in place.
    """

    def __init__(self, lr: float, beta1: float, beta2: float, eps: float, step: int):
        super().__init__()
        self.lr = lr
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.step = step

    def forward(self, param, grad, exp_avg, exp_avg_sq):
        m = exp_avg * self.beta1 + grad * (1.0 - self.beta1)
        v = exp_avg_sq * self.beta2 + grad * grad * (1.0 - self.beta2)
        m_hat = m / (1.0 - self.beta1 ** self.step)
        v_hat = v / (1.0 - self.beta2 ** self.step)
        return param - self.lr * m_hat / (torch.sqrt(v_hat) + self.eps)


num_params = 67108864
lr = 1e-3
beta1 = 0.9
beta2 = 0.999
eps = 1e-8
step = 10


def get_inputs():
    param = torch.randn(num_params)
    grad = torch.randn(num_params)
    exp_avg = torch.randn(num_params) * 0.1
    exp_avg_sq = torch.rand(num_params) * 0.01
    return [param, grad, exp_avg, exp_avg_sq]


def get_init_inputs():
    return [lr, beta1, beta2, eps, step]
