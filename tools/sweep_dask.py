#!/usr/bin/env python3
"""Run a txftl sweep's cells on a Dask cluster.

    python3 tools/sweep_dask.py GRID.toml [--scheduler tcp://HOST:8786 | --local N] [--out DIR]

Cells come from `txftl sweep --emit-cells GRID.toml`; each worker runs one
with `txftl sweep --run-cell -` (txftl must be on every worker at the same
path, `--txftl`), and its result line is appended to DIR/results.jsonl as it
arrives; cells already done there are skipped. At the end `txftl sweep
GRID.toml --out DIR --report-only` writes the table, the CSV and the HTML
page, exactly as a local sweep does. Without --scheduler, a
LocalCluster on 127.0.0.1 with N single-threaded workers runs the cells.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_common as common  # noqa: E402


def main():
    a = common.arguments(__doc__, "--scheduler", "address of a running Dask scheduler")
    import cloudpickle
    from dask.distributed import Client, LocalCluster, as_completed

    # Workers may not find tools/ on their path: ship the module with the task.
    cloudpickle.register_pickle_by_value(common)

    todo, results, out = common.cells_to_run(a.txftl, a.grid, a.out)
    if a.scheduler:
        client = Client(a.scheduler)
    else:
        cluster = LocalCluster(n_workers=a.local, threads_per_worker=1, host="127.0.0.1", dashboard_address=None, processes=True)
        client = Client(cluster)
    futures = [client.submit(common.run_cell, a.txftl, c, pure=False) for c in todo]
    common.collect(results, (f.result() for f in as_completed(futures)), len(todo))
    client.close()
    return common.summarise(a.txftl, a.grid, out)


if __name__ == "__main__":
    sys.exit(main())
