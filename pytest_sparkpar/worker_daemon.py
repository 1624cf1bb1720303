"""The Python worker daemon of the plugin's local executors: pyspark's own, with the workers'
garbage collections made cheap.

A reused worker runs a full `gc.collect()` after every task (pyspark.daemon). With pandas and
pyarrow loaded that walks every object of those libraries, and it took about 85% of the workers'
CPU in the permuted runs of a small pandas job (bench/plugin_speed.py). Here each worker, after a
task and its own collection, moves what survived (imports, caches) to the permanent generation
(`gc.freeze()`), which later collections skip; plain reference counting still frees it. pandas
and pyarrow start threads, so they are not imported before the fork.
"""

from __future__ import annotations

import gc

from pyspark import daemon

_task = daemon.worker


def worker(sock, authenticated):
    code = _task(sock, authenticated)
    gc.collect()
    gc.freeze()
    return code


daemon.worker = worker  # the forked workers' loop in daemon.manager calls it by this name

if __name__ == "__main__":
    daemon.manager()
