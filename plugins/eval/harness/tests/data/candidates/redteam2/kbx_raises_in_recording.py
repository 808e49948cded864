"""A kernelbenchx candidate that computes honestly in its trials and raises once timing
starts. In a timed loop the child records the test run's calls through
FunctionSide.feed (candidate._timed_loop: `inputs = model.feed(...)`), which is not
wrapped in CandidateChild._guarded as the timed call itself is: the candidate's
exception leaves the child's command loop unreported. Its failure must still be the
candidate's (a runtime error in timing), not the harness's."""
import torch

_calls = [0]


def matmul_chain(a, b):
    _calls[0] += 1
    if _calls[0] > 16:  # past the trials (the test code calls it 4 times a run)
        raise RuntimeError("redteam2: the candidate fails only while timed")
    return torch.relu(torch.mm(a, b))
