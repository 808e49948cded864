import torch


def apply_activation(x, activation=None, scale=1.0):
    # An activation passed as a function, as some tests do: that call's arguments cannot
    # cross into the candidate's process, so it is left out of the timed unit.
    y = x * scale
    return activation(y) if activation is not None else torch.relu(y)

##################################################################################################################################################

def test_apply_activation():
    results = {}
    results["test_tanh"] = apply_activation(torch.randn(64, 32), torch.tanh)
    results["test_default"] = apply_activation(torch.randn(64, 32), scale=0.5)
    # A transposed and an expanded tensor cross with their strides.
    results["test_transposed"] = apply_activation(torch.randn(32, 64).t(), scale=2.0)
    results["test_expanded"] = apply_activation(torch.randn(1, 32).expand(64, 32), None, 1.5)
    return results


test_results = test_apply_activation()
