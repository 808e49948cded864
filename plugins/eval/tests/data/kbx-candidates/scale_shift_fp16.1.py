# expect: numerical_mismatch (8e-3 off: beyond KernelBenchX's 5e-3 for fp16)
def scale_shift_fp16(input, scale, shift=0.0):
    return input * scale + (shift + 0.008)
