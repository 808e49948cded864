"""Reports its next-to-last trial twice, in one write to the harness's channel.

Both lines pass _candidate_trial's check (the first judge has not answered yet): two
judges go. The first answer asks for the last trial's fill; the second advances
next_trial past the last trial, and the job goes on to its timing (_start_timing: its
reference was timed before its session, so its loop starts at once). The last trial is
never run nor judged. The fill's answer then comes to _trial_filled, which reads
job.trials[next_trial] past the end: IndexError, caught by _host_answered, and the job
is decided as the harness's failure (harness_error, "the harness failed"), whatever its
candidate did: a candidate that would fail its last trial can turn that into the
harness's error."""
import os

import torch

import kforge_harness.candidate.candidate as _child
from kforge_harness import protocol

TRIALS = 5  # the request's options.trials (relu: no varied trials)


def _commands(self, model):
    command = self.channel.command()
    while command is not None:
        if "go" in command:
            trial = command["go"]
            report = self._guarded("forward", lambda: self._trial(model, command), trial=trial)
            line = protocol.encode(report).encode("utf-8")
            os.write(self.channel.result_fd, line * 2 if trial == TRIALS - 2 else line)
            command = self.channel.command()
        elif isinstance(command.get("time"), dict):
            command = self._timed_loop(model)
        else:
            command = self.channel.command()


_child.CandidateChild._commands = _commands


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
