"""An opt-in timeline of the server's work, for finding where a run's time goes
(docs/performance.md; bench/trace_summary.py reads it). With KFORGE_HARNESS_TRACE=FILE in
the server's environment, each event is one JSON line appended to FILE:
{"t": seconds on the server's monotonic clock, "server": its pid, "job": the request's id
or null, "what", ...}. What is traced: a job's start and answer, each command to a task host (asked: held
until its turn; sent; answered), each kind of message a candidate's child sends (its
first key: "ready", "trial", "called", ...), a host's start and readiness, and each
timing loop (asked for, started with the device alone, done). Without the variable
nothing is written and nothing is timed."""

import json
import os
import time


class Trace:
    def __init__(self, path=None):
        self._path = path if path is not None else os.environ.get("KFORGE_HARNESS_TRACE")
        # Opened at the first event, after the zygote was forked: no candidate child
        # inherits the file (a child forked by the server closes it: fileno()).
        self._file = None

    def __bool__(self):
        return bool(self._path)

    def fileno(self):
        """The open file's descriptor, or None."""
        return self._file.fileno() if self._file is not None else None

    def __call__(self, job, what, **fields):
        if not self._path:
            return
        if self._file is None:
            # Line-buffered: a server that is killed loses no event it wrote. The server's
            # own to read (0600): candidates learn the path (this object is in the
            # zygote's memory) and, as another user, cannot open the file where their
            # sandbox shows its directory (the harness's checkout, say). A candidate of
            # the server's own user (a sandbox in a user namespace, unprivileged) can:
            # keep the trace where no sandbox shows it (README, "The trace").
            fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
            os.fchmod(fd, 0o600)  # a file that was there before keeps its mode otherwise
            self._file = os.fdopen(fd, "a", buffering=1, encoding="utf-8")
        job_id = getattr(job, "id", None) if job is not None else None
        # The server's pid: request ids are per client, so two servers (one per device)
        # appending to one file number their jobs alike.
        self._file.write(json.dumps({"t": time.monotonic(), "server": os.getpid(), "job": job_id,
                                     "what": what, **fields},
                                    default=str) + "\n")
