#!/usr/bin/env python3
"""Kill -9 loop: a SQLite writer killed at random moments, then checked.

A writer process commits transactions one after another (each inserts a row
of 300 bytes with the next id and rewrites four older rows, with a 4-page
SQLite cache so pages spill) and prints each id after its COMMIT returned. The loop kills it
with SIGKILL after a random delay, opens the database in a new process (which
recovers it: the txftl extension replays the host log, SQLite rolls back a hot
journal or reads the WAL), runs `PRAGMA integrity_check`, and counts the
printed ids that are missing (committed transactions lost). Then it starts the
writer again on the same database. A corrupt database ends that mode's trials.

Targets: the txftl extension on an image formatted for a protocol
(`--protocols`), and SQLite's own unix VFS on a directory (`--unix`), with the
same writer, kills and checks. Every journal mode at every synchronous level;
a journal mode the protocol does not carry is reported as refused (the
extension refuses it at the PRAGMA).

The kill delays come from a seeded generator (`random.Random(seed)`, Python's
Mersenne Twister); where they land in the writer depends on the machine's
timing, so the figures are a measurement of this machine, not a replay.

    python3 tools/killtest.py --txftl target/release/txftl \\
        --ext crates/sqlite-ext/target/release/libtxftl_sqlite_ext.so \\
        --protocols plain,xftl --unix --kills 35 --json killtest.json
"""

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

JOURNALS = ["delete", "truncate", "persist", "wal", "off", "memory"]
SYNCS = ["off", "normal", "full"]


def connect(args):
    """The writer's or checker's connection, through the target's VFS."""
    if args.target == "unix":
        return sqlite3.connect(args.db, isolation_level=None)
    boot = sqlite3.connect(":memory:")
    boot.enable_load_extension(True)
    boot.load_extension(args.ext)
    boot.close()
    return sqlite3.connect(f"file:{args.db}?vfs={args.vfs}", uri=True, isolation_level=None)


def writer(args):
    conn = connect(args)
    try:
        conn.execute(f"PRAGMA journal_mode={args.journal}")
    except sqlite3.Error as e:
        print(f"refused {e}", flush=True)
        return
    conn.execute(f"PRAGMA synchronous={args.sync}")
    conn.execute("PRAGMA cache_size=4")  # pages: a transaction spills to the file
    conn.execute("CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, payload BLOB)")
    n = conn.execute("SELECT coalesce(max(id), 0) FROM t").fetchone()[0]
    rnd = random.Random(args.seed)
    print("ready", flush=True)
    while True:
        n += 1
        conn.execute("BEGIN")
        conn.execute("INSERT INTO t VALUES (?, randomblob(300))", (n,))
        for _ in range(4):
            conn.execute("UPDATE t SET payload = randomblob(300) WHERE id = ?", (rnd.randint(1, n),))
        conn.execute("COMMIT")
        print(n, flush=True)


def checker(args):
    out = {"ok": False}
    try:
        conn = connect(args)
        ic = conn.execute("PRAGMA integrity_check").fetchall()
        out["integrity"] = "ok" if ic == [("ok",)] else "; ".join(r[0] for r in ic[:3])
        out["ids"] = [r[0] for r in conn.execute("SELECT id FROM t ORDER BY id")]
        out["ok"] = out["integrity"] == "ok"
        conn.close()
    except sqlite3.Error as e:
        out["error"] = str(e)
    print(json.dumps(out), flush=True)


def child(args, role, extra=()):
    cmd = [sys.executable, os.path.abspath(__file__), f"--{role}", "--target", args.target, "--db", args.db,
           "--journal", args.journal, "--sync", args.sync, "--seed", str(args.seed), "--vfs", args.vfs]
    if args.ext:
        cmd += ["--ext", args.ext]
    return cmd + list(extra)


def one_mode(args, rnd):
    """Runs the kills of one target, journal and synchronous level."""
    expected = set()  # ids whose COMMIT returned and that were there at the last check
    res = {"target": args.label, "journal": args.journal, "sync": args.sync, "kills": 0, "committed": 0,
           "lost": 0, "trials_losing": 0, "corrupt": False, "refused": None}
    for k in range(args.kills):
        args.seed = rnd.randrange(1 << 30)
        w = subprocess.Popen(child(args, "writer"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=args.env)
        first = w.stdout.readline().strip()
        if first.startswith("refused"):
            w.wait()
            res["refused"] = first[len("refused "):]
            return res
        if first != "ready":
            w.kill()
            res["error"] = f"writer did not start: {first} {w.stderr.read()[:500]}"
            return res
        time.sleep(rnd.uniform(0.0, args.max_delay))
        w.send_signal(signal.SIGKILL)
        for line in w.stdout:
            line = line.strip()
            if line.isdigit():
                expected.add(int(line))
                res["committed"] += 1
        w.wait()
        if w.returncode != -signal.SIGKILL:
            # It ended by itself before the kill: an error SQLite returned.
            res["error"] = f"writer exited with {w.returncode} before the kill: {w.stderr.read()[-800:]}"
            return res
        res["kills"] += 1
        c = subprocess.run(child(args, "check"), capture_output=True, text=True, env=args.env)
        try:
            got = json.loads(c.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            got = {"ok": False, "error": c.stderr[-500:]}
        if not got["ok"]:
            res["corrupt"] = True
            res["corrupt_at_kill"] = k + 1
            res["corrupt_reason"] = got.get("error") or got.get("integrity")
            break
        missing = expected - set(got["ids"])
        res["lost"] += len(missing)
        res["trials_losing"] += bool(missing)
        expected -= missing
        # The next writer continues after what is there (a lost id is reused).
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--writer", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--target", default="txftl", help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    ap.add_argument("--journal", default="delete", help=argparse.SUPPRESS)
    ap.add_argument("--sync", default="full", help=argparse.SUPPRESS)
    ap.add_argument("--vfs", default="txftl", help=argparse.SUPPRESS)
    ap.add_argument("--txftl", default="target/release/txftl", help="the txftl binary (to format images)")
    ap.add_argument("--ext", default="crates/sqlite-ext/target/release/libtxftl_sqlite_ext.so", help="the extension")
    ap.add_argument("--protocols", default="plain,xftl", help="comma-separated; empty for none")
    ap.add_argument("--unix", action="store_true", help="also SQLite's unix VFS")
    ap.add_argument("--journals", default=",".join(JOURNALS))
    ap.add_argument("--syncs", default=",".join(SYNCS))
    ap.add_argument("--kills", type=int, default=35, help="kills per mode")
    ap.add_argument("--max-delay", type=float, default=0.6, help="longest wait before a kill, seconds")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the results there too")
    ap.add_argument("--keep", help="keep each failing mode's image (or database) and host log in this directory")
    args = ap.parse_args()
    if args.writer:
        return writer(args)
    if args.check:
        return checker(args)
    args.ext = os.path.abspath(args.ext)
    if args.protocols and not hasattr(sqlite3.Connection, "enable_load_extension"):
        sys.exit(f"{sys.executable}: this Python's sqlite3 cannot load extensions; run the script with one that can "
                 "(Debian's /usr/bin/python3, package python3)")
    targets = [("txftl", p) for p in args.protocols.split(",") if p] + ([("unix", "unix")] if args.unix else [])
    entries = {}
    if args.protocols:
        out = subprocess.run([args.txftl, "protocols", "--json"], check=True, capture_output=True, text=True).stdout
        entries = {e["name"]: e for e in json.loads(out)}
    results = []
    rnd = random.Random(args.seed)
    print(f"{'target':<14}{'journal':<10}{'sync':<8}{'kills':>6}{'committed':>10}{'lost':>6}  outcome", flush=True)
    for target, label in targets:
        for journal in args.journals.split(","):
            for sync in args.syncs.split(","):
                with tempfile.TemporaryDirectory() as d:
                    args.target, args.label, args.journal, args.sync = target, label, journal, sync
                    args.env = dict(os.environ)
                    if target == "txftl":
                        image = os.path.join(d, "dev.img")
                        subprocess.run([args.txftl, "format", "--image", image, "--preset", "jasmine",
                                        "--blocks-per-plane", "16", "--protocol", label, "--fs"],
                                       check=True, capture_output=True)
                        args.env["TXFTL_IMAGE"] = image
                        args.db = "kill.db"
                    else:
                        args.db = os.path.join(d, "kill.db")
                    r = one_mode(args, rnd)
                    # SQLite: with the journal OFF or in MEMORY, "if the application crashes in the
                    # middle of a transaction ... the database file will very likely go corrupt";
                    # only a device with transactions keeps the database whole there.
                    transactional = target == "txftl" and entries[label]["transactional"]
                    r["corruption_documented"] = journal in ("off", "memory") and not transactional
                    if args.keep and (r["lost"] or r["corrupt"] or r.get("error")):
                        import shutil
                        shutil.copytree(d, os.path.join(args.keep, f"{label}-{journal}-{sync}"), dirs_exist_ok=True)
                results.append(r)
                if r["refused"]:
                    outcome = f"refused: {r['refused']}"
                elif r.get("error"):
                    outcome = f"error: {r['error']}"
                elif r["corrupt"]:
                    why = " (SQLite documents it for this journal mode)" if r["corruption_documented"] else ""
                    outcome = f"CORRUPT at kill {r['corrupt_at_kill']}{why}: {r['corrupt_reason']}".replace("\n", " ")
                else:
                    outcome = "ok" if r["lost"] == 0 else f"LOST {r['lost']} committed in {r['trials_losing']} kills"
                print(f"{label:<14}{journal:<10}{sync:<8}{r['kills']:>6}{r['committed']:>10}{r['lost']:>6}  {outcome}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seed": args.seed, "kills": args.kills, "max_delay_s": args.max_delay, "results": results}, f, indent=1)
    bad = [r for r in results if r["target"] != "unix"
           and (r["lost"] or (r["corrupt"] and not r["corruption_documented"]) or r.get("error"))]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
