#!/usr/bin/env python3
"""Run a txftl sweep's cells on a Dask cluster.

    python3 tools/sweep_dask.py GRID.toml [--scheduler tcp://HOST:8786 | --local N] [--out DIR]

Cells come from `txftl sweep --emit-cells GRID.toml`; each worker runs one
with `txftl sweep --run-cell -` (txftl must be on every worker at the same
path, `--txftl`), and its result line is appended to DIR/results.jsonl as it
arrives; cells already done there are skipped. At the end `txftl sweep
GRID.toml --out DIR` finds every cell done and writes the table, the CSV and
the HTML page, exactly as a local sweep does. Without --scheduler, a
LocalCluster on 127.0.0.1 with N single-threaded workers runs the cells.
"""

import argparse
import json
import os
import subprocess
import sys


def run_cell(txftl, cell_line):
    """One cell, on a worker: its result line (a JSON object)."""
    p = subprocess.run([txftl, "sweep", "--run-cell", "-"], input=cell_line, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"txftl sweep --run-cell failed ({p.returncode}): {p.stderr.strip()}")
    return p.stdout.strip()


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
    ap.add_argument("--scheduler", help="address of a running Dask scheduler")
    ap.add_argument("--local", type=int, default=os.cpu_count(), help="workers of the local cluster")
    ap.add_argument("--out", help="results directory [default: sweep-NAME, as txftl sweep]")
    a = ap.parse_args()

    from dask.distributed import Client, LocalCluster, as_completed

    emitted = subprocess.run([a.txftl, "sweep", "--emit-cells", a.grid], capture_output=True, text=True, check=True)
    cells = [line for line in emitted.stdout.splitlines() if line.strip()]
    name = json.loads(cells[0])["grid"] if cells else "empty"
    out = a.out or f"sweep-{name}"
    os.makedirs(out, exist_ok=True)
    results = os.path.join(out, "results.jsonl")
    done = done_cells(results)
    todo = [c for c in cells if json.loads(c)["cell"] not in done]
    print(f"sweep {name}: {len(cells)} cells, {len(cells) - len(todo)} done before, {len(todo)} to run on Dask", file=sys.stderr)

    if a.scheduler:
        client = Client(a.scheduler)
    else:
        cluster = LocalCluster(n_workers=a.local, threads_per_worker=1, host="127.0.0.1",
                               dashboard_address=None, processes=True)
        client = Client(cluster)
    failed = 0
    with open(results, "a") as f:
        futures = [client.submit(run_cell, a.txftl, c, pure=False) for c in todo]
        for n, fut in enumerate(as_completed(futures), 1):
            line = fut.result()
            f.write(line + "\n")
            f.flush()
            r = json.loads(line)
            failed += r["status"] != "ok"
            print(f"  {n}/{len(todo)} cells done, {failed} failed", file=sys.stderr)
    client.close()
    # Every cell is done now: txftl summarises them as a local sweep would.
    return subprocess.run([a.txftl, "sweep", a.grid, "--out", out, "--quiet"]).returncode


if __name__ == "__main__":
    sys.exit(main())
