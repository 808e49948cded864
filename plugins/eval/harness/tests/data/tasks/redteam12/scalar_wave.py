import torch


def scalar_wave(freq: float, phase: float) -> torch.Tensor:
    t = torch.arange(1 << 21, dtype=torch.float32)
    w = torch.sin(t * freq + phase) * torch.exp(t * -1e-7)
    return w * torch.cos(t * (freq * 0.5)) + torch.tanh(w)

##################################################################################################################################################

import torch


def test_scalar_wave():
    results = {}
    for i in range(2):
        freq = float(torch.rand(1)) * 1e-3
        phase = float(torch.rand(1)) * 6.0
        results[f"test_case_{i}"] = scalar_wave(freq, phase)
    return results


test_results = test_scalar_wave()
