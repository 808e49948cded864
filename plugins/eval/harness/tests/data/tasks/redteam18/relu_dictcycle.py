import torch
import torch.nn as nn


def _box(x):
    """x in a dict that holds itself: handover/tree.py lays out the dict ("x" in the
    slot) and leaves its reach into itself (a cycle) to the child as a "made" node,
    without the inputs_unchecked flag a made value of another kind gets."""
    box = {"x": x}
    box["self"] = box
    return box


class Model(nn.Module):
    """ReLU of the boxed tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, box):
        return torch.relu(box["x"])


rows = 256
cols = 4096


def get_inputs():
    return [_box(torch.randn(rows, cols))]


def get_init_inputs():
    return []
