import torch


def momentum_step(param, grad, buffer, lr=0.1, momentum=0.9):
    # Correct results, but the gradient it was given is spent as scratch: zeroed in place,
    # which the reference never does (the test code does not look at it afterwards).
    buffer.mul_(momentum).add_(grad)
    param.add_(buffer, alpha=-lr)
    grad.zero_()
    return param, buffer
