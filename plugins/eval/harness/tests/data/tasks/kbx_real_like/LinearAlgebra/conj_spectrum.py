import torch


def conj_spectrum(x):
    # .conj() of a complex tensor is a lazy view (its conjugate bit set), and a tuple.
    spectrum = torch.fft.fft(x)
    return spectrum.conj(), spectrum.abs()

##################################################################################################################################################

def test_conj_spectrum():
    results = {}
    results["test_case_1"] = conj_spectrum(torch.tensor([1.0, 2.0, 0.0, -1.0]))
    results["test_random"] = [conj_spectrum(torch.randn(64)) for _ in range(2)]
    return results


test_results = test_conj_spectrum()
