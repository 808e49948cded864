"""A kernelbenchx candidate that memoizes by argument identity. Written when the timed
unit replayed, with the very same argument objects, the calls that the child had just
recorded by running the test code (outside the child's clock but inside the server's
bracket): the recording computed honestly and remembered the result, the replay (the
timed part) returned it, and nothing of the replay was checked (16.8x, a pass). Since
then the task host records the calls and hands their arguments over, new objects over
new values every unit (kbx_calls.py): this memo never hits."""
import torch

_seen = []


def matmul_chain(a, b):
    for args, result in _seen:
        if args[0] is a and args[1] is b:
            print("kbx_memo_replay: memo hit")  # in its log: what the test looks for
            return result
    result = torch.relu(torch.mm(a, b))
    _seen.append(((a, b), result))
    del _seen[:-16]
    return result
