"""Counting a child's threads from outside: the server reads /proc for the child's whole
process tree (the sandbox's supervisor, its reaper and worker, anything they started), so
what the count says does not depend on code running in the candidate's process."""

import os


def tree_threads(pid):
    """Threads of process `pid` and of all its descendants, or None when the kernel does
    not list a process's children (/proc/PID/task/TID/children needs CONFIG_PROC_CHILDREN)
    or the process is gone."""
    if not os.path.exists(f"/proc/{pid}/task/{pid}/children"):
        return None
    total = 0
    pending, seen = [pid], set()
    while pending:
        process = pending.pop()
        if process in seen:
            continue
        seen.add(process)
        try:
            tids = os.listdir(f"/proc/{process}/task")
        except OSError:  # it ended meanwhile
            continue
        total += len(tids)
        for tid in tids:
            try:
                with open(f"/proc/{process}/task/{tid}/children", encoding="ascii") as handle:
                    pending += [int(child) for child in handle.read().split()]
            except OSError:
                pass
    return total
