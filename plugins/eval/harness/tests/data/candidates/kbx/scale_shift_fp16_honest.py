import torch


def scale_shift_fp16(input, scale, shift=0.0):
    return (input.float() * scale + shift).half()  # fp32 arithmetic, rounded once
