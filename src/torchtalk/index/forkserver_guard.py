"""Imported by the multiprocessing forkserver of the indexer's pool (as a preload module), and only there.

Importing it arms a parent-death signal: the forkserver dies the moment the indexer does, even from a
SIGKILL. Every process it forks (the pool workers) arms the same signal right after the fork, and exits
at once if the forkserver is already gone by then: a worker forked in the instant of the kill would
otherwise outlive everything, waiting for tasks that never come. Without this module the forkserver waits
until every worker has let go of the indexer's pipes, and a worker inside a long parse finishes it first.
It also leads a process group of its own, the workers' too, so that a signal sent to the indexer's whole group
reaches the indexer alone, which stops them: Note [A stop signal and the pool's threads].
"""

import os

from ..procs import die_with_parent

die_with_parent()
os.setpgid(0, 0)  # Note [A stop signal and the pool's threads]
_FORKSERVER = os.getpid()


def _in_child() -> None:
    die_with_parent()
    if os.getppid() != _FORKSERVER:  # the forkserver died between the fork and the line above
        os._exit(1)


os.register_at_fork(after_in_child=_in_child)
