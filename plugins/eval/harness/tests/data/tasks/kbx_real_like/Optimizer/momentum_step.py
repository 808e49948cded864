import torch


def momentum_step(param, grad, buffer, lr=0.1, momentum=0.9):
    # An optimizer step as the field writes it: the parameter and the buffer are updated
    # in place and returned; the gradient is only read.
    buffer.mul_(momentum).add_(grad)
    param.add_(buffer, alpha=-lr)
    return param, buffer

##################################################################################################################################################

def test_momentum_step():
    results = {}
    param = torch.randn(32)
    results["test_case_1"] = momentum_step(param.clone(), torch.randn(32), torch.zeros(32))
    results["test_case_2"] = momentum_step(param.clone(), torch.randn(32), torch.randn(32), lr=0.5)
    return results


test_results = test_momentum_step()
