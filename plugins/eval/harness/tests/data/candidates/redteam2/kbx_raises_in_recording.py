"""A kernelbenchx candidate that computes honestly in its trials and raises once timing
starts. Written when a timed loop's child recorded the test run's calls through
FunctionSide.feed, outside CandidateChild._guarded: the candidate's exception left the
child's command loop unreported. Now the task host records the calls and the child only
replays them, inside the timed call: the exception is raised there. Its failure must be
the candidate's (a runtime error in timing), not the harness's."""
import torch

_calls = [0]


def matmul_chain(a, b):
    _calls[0] += 1
    if _calls[0] > 16:  # past the trials (the test code calls it 4 times a run)
        raise RuntimeError("redteam2: the candidate fails only while timed")
    return torch.relu(torch.mm(a, b))
