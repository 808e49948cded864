"""Honest scale, lazy transpose: tasks/redteam6/scale_transpose's reference computes
(x * 2).t().contiguous(); this candidate returns (x * 2).t(), a plain torch.Tensor
(exactly the type the hand-over accepts) whose strides defer the transpose. The child's
hand-over copies it into the lent slot (contiguous): that copy, outside the events,
does the transpose the reference paid for inside its events, and the reference's loop
paid a plain copy at the same place, which the server subtracts as the reference's gap
(timing_plan.charged). Nothing of the harness is touched; L1 sees ordinary torch."""
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return (x * 2.0).t()
