#!/usr/bin/python3
"""Large transactions on the README's example image (jasmine, 16 blocks per
plane, xftl, journal_mode=OFF): a 30 MB table deleted in one transaction
(SQLite's secure_delete zeroes every page), VACUUM of a 30 MB table with a
quarter of its rows deleted, and a 200 MB transaction, larger than the free
space (SQLITE_FULL; the database stays whole, before and after a reopen).

    /usr/bin/python3 tools/large_tx.py target/release/txftl \
        crates/sqlite-ext/target/release/libtxftl_sqlite_ext.so /tmp/large-tx

The third argument is a directory for the image (created or overwritten).
"""
import os, sqlite3, subprocess, sys, time
B, EXT, D = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(D, exist_ok=True)
img = os.path.join(D, "dev.img")
for f in (img, img + ".host"):
    if os.path.exists(f): os.remove(f)
subprocess.run([B, "format", "--image", img, "--preset", "jasmine", "--blocks-per-plane", "16", "--protocol", "xftl", "--fs"], check=True, stdout=subprocess.DEVNULL)
os.environ["TXFTL_IMAGE"] = img
boot = sqlite3.connect(":memory:"); boot.enable_load_extension(True); boot.load_extension(EXT); boot.close()
def conn():
    c = sqlite3.connect("file:big.db?vfs=txftl", uri=True, isolation_level=None)
    c.execute("PRAGMA journal_mode=OFF")
    return c
c = conn()
print("secure_delete =", c.execute("PRAGMA secure_delete").fetchone()[0])
c.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)")
t0 = time.time()
row = 1000
n = 30 * 1024 * 1024 // row
for chunk in range(0, n, 3000):
    c.execute("BEGIN")
    c.executemany("INSERT INTO t(v) VALUES(randomblob(?))", [(row,)] * min(3000, n - chunk))
    c.execute("COMMIT")
pages = c.execute("PRAGMA page_count").fetchone()[0]; ps = c.execute("PRAGMA page_size").fetchone()[0]
print(f"table: {n} rows of {row} B, database {pages} pages of {ps} B = {pages*ps/1e6:.1f} MB ({time.time()-t0:.1f} s wall)")
def step(name, sql):
    t = time.time()
    try:
        c.execute(sql)
        print(f"{name}: ok ({time.time()-t:.1f} s wall)")
    except sqlite3.Error as e:
        print(f"{name}: {type(e).__name__}: {e}")
step("DELETE FROM t (one transaction)", "DELETE FROM t")
print("rows after delete:", c.execute("SELECT count(*) FROM t").fetchone()[0], "| integrity:", c.execute("PRAGMA integrity_check").fetchone()[0])
for chunk in range(0, n, 3000):
    c.execute("BEGIN"); c.executemany("INSERT INTO t(v) VALUES(randomblob(?))", [(row,)] * min(3000, n - chunk)); c.execute("COMMIT")
c.execute("DELETE FROM t WHERE id % 4 = 0")
before = c.execute("PRAGMA page_count").fetchone()[0]
step("VACUUM", "VACUUM")
print(f"pages before/after VACUUM: {before} / {c.execute('PRAGMA page_count').fetchone()[0]} | integrity:", c.execute("PRAGMA integrity_check").fetchone()[0])
rows = c.execute("SELECT count(*) FROM t").fetchone()[0]
c.close(); c = conn()
print("after reopen: rows", c.execute("SELECT count(*) FROM t").fetchone()[0], "of", rows, "| integrity:", c.execute("PRAGMA integrity_check").fetchone()[0])
# Larger than the device's free space: 200 MB in one transaction.
c.execute("BEGIN")
try:
    for _ in range(200):
        c.executemany("INSERT INTO t(v) VALUES(randomblob(?))", [(row,)] * 1000)
    c.execute("COMMIT"); print("200 MB transaction: committed?!")
except sqlite3.Error as e:
    print(f"200 MB transaction: {type(e).__name__}: {e}")
    try: c.execute("ROLLBACK")
    except sqlite3.Error as e2: print("rollback:", e2)
print("after it: rows", c.execute("SELECT count(*) FROM t").fetchone()[0], "| integrity:", c.execute("PRAGMA integrity_check").fetchone()[0])
c.close(); c = conn()
print("after reopen: rows", c.execute("SELECT count(*) FROM t").fetchone()[0], "| integrity:", c.execute("PRAGMA integrity_check").fetchone()[0])
