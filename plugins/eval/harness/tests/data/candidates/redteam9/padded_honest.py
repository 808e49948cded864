"""An honest ReLU whose output rows are padded (a row pitch of dim + 16 elements, a
common layout for aligned rows): the clamp written into a slice of a wider buffer. Same
shape, same values as the reference's; correct wherever the outputs are copied by their
strides (a trial's copy into the slot). The read hand-over reads tensor.data_ptr() for
nbytes in memory order, padding included."""
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        if x.dim() != 2:
            return torch.clamp(x, min=0.0)
        out = torch.empty(x.shape[0], x.shape[1] + 16, dtype=x.dtype)[:, :x.shape[1]]
        torch.clamp(x, min=0.0, out=out)
        return out
