# Hostile: raises an exception whose type name and text claim a build that failed for want
# of a header the machine lacks (the host's fault), although it builds nothing at all.
import torch


class CompileError(Exception):
    def __str__(self):
        return ("Error building extension 'relu':\nkernel.cu:1:10: fatal error: "
                "cuda_runtime.h: No such file or directory")


class ModelNew(torch.nn.Module):
    def forward(self, x):
        raise CompileError()
