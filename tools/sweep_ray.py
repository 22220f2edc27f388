#!/usr/bin/env python3
"""Run a txftl sweep's cells on a Ray cluster (sweep_dask.py's steps, on Ray).

    RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE=disabled \\
        python3 tools/sweep_ray.py GRID.toml [--address ray://HOST:10001 | --local N] [--out DIR]

Cells come from `txftl sweep --emit-cells GRID.toml`; each task runs one
with `txftl sweep --run-cell -` (txftl at the same path on every node,
`--txftl`); result lines are appended to DIR/results.jsonl as they arrive,
cells already done there skipped; then `txftl sweep GRID.toml --out DIR
--report-only` writes the table, the CSV and the HTML page. Without
--address, a local Ray runtime with N CPUs runs the cells (one CPU a cell).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_common as common  # noqa: E402


def results_as_they_come(ray, pending):
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        yield ray.get(ready[0])


def main():
    a = common.arguments(__doc__, "--address", "address of a running Ray cluster")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray
    import ray.cloudpickle

    # Workers may not find tools/ on their path: ship the module with the task.
    ray.cloudpickle.register_pickle_by_value(common)

    todo, results, out = common.cells_to_run(a.txftl, a.grid, a.out)
    if a.address:
        ray.init(address=a.address)
    else:
        ray.init(num_cpus=a.local, include_dashboard=False)
    run_cell = ray.remote(num_cpus=1)(common.run_cell)
    pending = [run_cell.remote(a.txftl, c) for c in todo]
    common.collect(results, results_as_they_come(ray, pending), len(todo))
    ray.shutdown()
    return common.summarise(a.txftl, a.grid, out)


if __name__ == "__main__":
    sys.exit(main())
