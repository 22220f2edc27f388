"""What the sweep drivers (sweep_dask.py, sweep_ray.py) share: the cells of
a grid from `txftl sweep --emit-cells`, the ones a results file already has,
one cell run with `txftl sweep --run-cell -`, the results appended as they
come, and the summary `txftl sweep` writes once every cell is done."""

import json
import os
import subprocess
import sys


def cells_to_run(txftl, grid, out):
    """(cells still to run, as JSON lines; the results file; the output directory)."""
    emitted = subprocess.run([txftl, "sweep", "--emit-cells", grid], capture_output=True, text=True, check=True)
    cells = [line for line in emitted.stdout.splitlines() if line.strip()]
    name = json.loads(cells[0])["grid"] if cells else "empty"
    out = out or f"sweep-{name}"
    os.makedirs(out, exist_ok=True)
    results = os.path.join(out, "results.jsonl")
    done = set()
    if os.path.exists(results):
        with open(results) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    if r["status"] == "ok":
                        done.add(r["cell"])
    todo = [c for c in cells if json.loads(c)["cell"] not in done]
    print(f"sweep {name}: {len(cells)} cells, {len(cells) - len(todo)} done before, {len(todo)} to run", file=sys.stderr)
    return todo, results, out


def run_cell(txftl, cell_line):
    """One cell, on a worker: its result line (a JSON object)."""
    p = subprocess.run([txftl, "sweep", "--run-cell", "-"], input=cell_line, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"txftl sweep --run-cell failed ({p.returncode}): {p.stderr.strip()}")
    return p.stdout.strip()


def collect(results, lines, total):
    """Appends each result line to the results file as it arrives."""
    failed = 0
    with open(results, "a") as f:
        for n, line in enumerate(lines, 1):
            f.write(line + "\n")
            f.flush()
            failed += json.loads(line)["status"] != "ok"
            print(f"  {n}/{total} cells done, {failed} failed", file=sys.stderr)


def summarise(txftl, grid, out):
    """txftl writes the table, the CSV and the page of the results, as a local sweep does (running nothing)."""
    return subprocess.run([txftl, "sweep", grid, "--out", out, "--report-only", "--quiet"]).returncode


def arguments(doc, cluster_flag, cluster_help):
    import argparse

    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("grid")
    ap.add_argument("--txftl", default=os.path.abspath("target/release/txftl"))
    ap.add_argument(cluster_flag, help=cluster_help)
    ap.add_argument("--local", type=int, default=os.cpu_count(), help="workers (CPUs) of the local cluster")
    ap.add_argument("--out", help="results directory [default: sweep-NAME, as txftl sweep]")
    return ap.parse_args()
