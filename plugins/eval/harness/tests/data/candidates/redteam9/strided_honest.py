"""An honest ReLU whose output is column-major (a transposed layout, same shape and
values): the clamp written into a tensor made as the transpose of a (dim, batch) buffer.
Correct wherever the outputs are copied by their strides (a trial's copy into the slot);
the read hand-over reads tensor.data_ptr() for nbytes in memory order."""
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        if x.dim() != 2:
            return torch.clamp(x, min=0.0)
        out = torch.empty(x.shape[1], x.shape[0], dtype=x.dtype).t()
        torch.clamp(x, min=0.0, out=out)
        return out
