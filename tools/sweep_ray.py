#!/usr/bin/env python3
"""Run a txftl sweep's cells on a Ray cluster (the same as sweep_dask.py, on Ray).

    RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE=disabled \\
        python3 tools/sweep_ray.py GRID.toml [--address ray://HOST:10001 | --local N] [--out DIR]

Cells come from `txftl sweep --emit-cells GRID.toml`; each task runs one
with `txftl sweep --run-cell -` (txftl at the same path on every node,
`--txftl`); result lines are appended to DIR/results.jsonl as they arrive,
cells already done there skipped; then `txftl sweep GRID.toml --out DIR`
writes the table, the CSV and the HTML page. Without --address, a local
Ray runtime with N CPUs runs the cells (one CPU a cell).
"""

import argparse
import json
import os
import subprocess
import sys


def done_cells(results):
    done = set()
    if os.path.exists(results):
        with open(results) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    if r["status"] == "ok":
                        done.add(r["cell"])
    return done


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("grid")
    ap.add_argument("--txftl", default=os.path.abspath("target/release/txftl"))
    ap.add_argument("--address", help="address of a running Ray cluster")
    ap.add_argument("--local", type=int, default=os.cpu_count(), help="CPUs of the local Ray runtime")
    ap.add_argument("--out", help="results directory [default: sweep-NAME, as txftl sweep]")
    a = ap.parse_args()

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    @ray.remote(num_cpus=1)
    def run_cell(txftl, cell_line):
        p = subprocess.run([txftl, "sweep", "--run-cell", "-"], input=cell_line, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"txftl sweep --run-cell failed ({p.returncode}): {p.stderr.strip()}")
        return p.stdout.strip()

    emitted = subprocess.run([a.txftl, "sweep", "--emit-cells", a.grid], capture_output=True, text=True, check=True)
    cells = [line for line in emitted.stdout.splitlines() if line.strip()]
    name = json.loads(cells[0])["grid"] if cells else "empty"
    out = a.out or f"sweep-{name}"
    os.makedirs(out, exist_ok=True)
    results = os.path.join(out, "results.jsonl")
    done = done_cells(results)
    todo = [c for c in cells if json.loads(c)["cell"] not in done]
    print(f"sweep {name}: {len(cells)} cells, {len(cells) - len(todo)} done before, {len(todo)} to run on Ray", file=sys.stderr)

    if a.address:
        ray.init(address=a.address)
    else:
        ray.init(num_cpus=a.local, include_dashboard=False)
    pending = [run_cell.remote(a.txftl, c) for c in todo]
    failed = 0
    with open(results, "a") as f:
        n = 0
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            line = ray.get(ready[0])
            f.write(line + "\n")
            f.flush()
            n += 1
            failed += json.loads(line)["status"] != "ok"
            print(f"  {n}/{len(todo)} cells done, {failed} failed", file=sys.stderr)
    ray.shutdown()
    return subprocess.run([a.txftl, "sweep", a.grid, "--out", out, "--quiet"]).returncode


if __name__ == "__main__":
    sys.exit(main())
