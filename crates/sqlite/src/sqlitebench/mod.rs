//! sqlite-bench: LevelDB's SQLite benchmark (`doc/bench/db_bench_sqlite3.cc`,
//! also packaged alone as `sqlite-bench`), the one NoLgn-FTL measures with
//! (its overwrite benchmark at values of 256 B to 16 KiB).
//!
//! Followed (google/leveldb `doc/bench/db_bench_sqlite3.cc`):
//! - the table `CREATE TABLE test (key blob, value blob, PRIMARY KEY(key))`;
//!   keys the 16 bytes of the entry number printed `%016d`, bound as blobs;
//!   values cut in turn from db_bench's `RandomGenerator` (1 MiB of LevelDB
//!   `CompressibleString`s from `Random(301)`, compression ratio 0.5), so
//!   they are byte for byte db_bench's values ([`random`]);
//! - the statements: every write is `REPLACE INTO test (key, value) VALUES
//!   (?, ?)` (the fills too), a random read `SELECT * FROM test WHERE key =
//!   ?`, the sequential read one `SELECT * FROM test ORDER BY key` stepped
//!   `reads` times;
//! - the benchmarks ([`Benchmark`]) with their entry counts, orders, value
//!   sizes, and sync: `fillseq`, `fillrandom`, `overwrite` (and their
//!   `*batch` forms) at `PRAGMA synchronous = OFF`; `fillseqsync`,
//!   `fillrandsync` at `FULL` with `num / 100` entries; `fillseq100K`,
//!   `fillrand100K` with `num / 1000` values of 100,000 B; `readseq`,
//!   `readrandom` (`reads`, default `num`, keys `Uniform(reads)`) and
//!   `readrand100K` (`reads / 1000`); random keys are `Uniform(entries)`;
//! - transactions: one entry per statement in autocommit, except the
//!   `*batch` benchmarks, which put [`BenchSpec::batch`] entries (db_bench:
//!   1000) between `BEGIN TRANSACTION` and `END TRANSACTION` when
//!   [`BenchSpec::transaction`] is on (`FLAGS_transaction`; off is
//!   `--no_transaction`);
//! - the settings of `Open()`: `PRAGMA cache_size` (4096 pages), the page
//!   size, in WAL mode `PRAGMA wal_autocheckpoint = 4096`, `PRAGMA
//!   locking_mode = EXCLUSIVE`; after each write benchmark, in WAL mode, a
//!   full checkpoint (`sqlite3_wal_checkpoint_v2(..., FULL)`, as
//!   `WalCheckpoint()`), inside the benchmark's timed part.
//!
//! Deviations:
//! - the journal mode is the connection's, that is the [`crate::Stack`]'s
//!   mode (`wal` is db_bench's `--WAL_enabled=1`, its default; `xftl` runs
//!   with the journal off on the transactional device); the WAL settings
//!   apply when the connection is in WAL mode;
//! - the page size: db_bench sets `--page_size` (1024 by default) on each
//!   new database; here [`BenchSpec::page_size`] `None` keeps the
//!   connection's (set by [`crate::Stack::open`]), `Some` sets it and is
//!   refused if the database already has another;
//! - a benchmark that wants a fresh database (the fills) gets a fresh table
//!   in the same database (`DROP TABLE` and `CREATE TABLE`, untimed, before
//!   `Start`), not a new database file: the dropped table's pages are reused;
//! - random keys (`rand_.Next() % n` in db_bench, LevelDB's `Random(301)`)
//!   come from a ChaCha8 stream of [`BenchSpec::seed`], one for the whole
//!   run as db_bench's `rand_`; the values are db_bench's own;
//! - a batch never passes the benchmark's entry count (db_bench's inner loop
//!   writes a whole last batch even past it);
//! - bytes: db_bench counts key and value of each write (so do we), the
//!   value only of each sequential read (it adds `sqlite3_column_bytes` of
//!   columns 1 and 2 of a two-column row) and nothing for random reads; here
//!   each read row counts its key and value;
//! - `locking_mode = EXCLUSIVE` is refused by the VFS on a transactional
//!   device (it would hide ROLLBACK from the VFS, see [`crate::vfs`]): there
//!   the benchmark runs in SQLite's NORMAL locking mode, which costs a read
//!   of the database header at the start of each transaction; the report
//!   says which mode ran ([`BenchReport::locking_mode`]);
//! - [`BenchSpec::synchronous`] `Some(s)` runs every write benchmark at `s`
//!   (NoLgn-FTL's NORMAL and FULL modes) instead of db_bench's OFF / FULL;
//!   the connection's setting is restored at the end;
//! - reads count the keys they found ([`BenchResult::found`]); db_bench does not.
//!
//! Hooks: [`run_with`] calls a closure at the start and the finish of each
//! benchmark and around each of its transactions (an autocommit statement,
//! or a batch from `BEGIN` to its commit), so a caller can time them on the
//! device clock and attribute device writes. A write benchmark's WAL
//! checkpoint lies between its last `End` and its `Finish`.

pub mod random;

use crate::Synchronous;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use random::{ValueGenerator, GENERATOR_BYTES};
use rusqlite::{Connection, OptionalExtension};
use serde::Serialize;

/// Bytes of a key (`%016d`).
pub const KEY_BYTES: usize = 16;
/// Entries at most (a key has 16 digits).
pub const NUM_MAX: u64 = 1_000_000_000;
/// Bytes of a value at most (the generator's data must hold one).
pub const VALUE_SIZE_MAX: u32 = (GENERATOR_BYTES / 2) as u32;
/// The value size of the `*100K` benchmarks.
pub const VALUE_SIZE_100K: u32 = 100_000;
/// Entries per transaction at most.
pub const BATCH_MAX: u32 = 1_000_000;
/// db_bench's entries per transaction of the `*batch` benchmarks.
pub const DEFAULT_BATCH: u32 = 1_000;
/// Stream of the seed the keys are drawn from.
pub const STREAM_KEYS: u64 = 1;

/// The benchmarks of db_bench_sqlite3, under their names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Benchmark {
    FillSeq,
    FillSeqSync,
    FillSeqBatch,
    FillRandom,
    FillRandSync,
    FillRandBatch,
    Overwrite,
    OverwriteBatch,
    ReadRandom,
    ReadSeq,
    FillRand100K,
    FillSeq100K,
    ReadRand100K,
}

/// Keys in order of the entry number, or drawn at random.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Sequential,
    Random,
}

/// What a benchmark does, given the spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    Write {
        order: Order,
        /// A fresh table first (db_bench's `FRESH`).
        fresh: bool,
        entries: u64,
        value_size: u32,
        /// Entries per transaction (1: autocommit statements).
        per_tx: u32,
        /// db_bench's `write_sync`: `synchronous = FULL` (else `OFF`).
        sync: bool,
    },
    /// `reads` lookups of random keys in `0..reads`.
    ReadRandom { reads: u64 },
    /// One scan in key order, `reads` rows at most.
    ReadSeq { reads: u64 },
}

impl Benchmark {
    /// db_bench_sqlite3's default `--benchmarks` list, in its order.
    pub const DB_BENCH_DEFAULT: [Benchmark; 14] = [
        Benchmark::FillSeq,
        Benchmark::FillSeqSync,
        Benchmark::FillSeqBatch,
        Benchmark::FillRandom,
        Benchmark::FillRandSync,
        Benchmark::FillRandBatch,
        Benchmark::Overwrite,
        Benchmark::OverwriteBatch,
        Benchmark::ReadRandom,
        Benchmark::ReadSeq,
        Benchmark::FillRand100K,
        Benchmark::FillSeq100K,
        Benchmark::ReadSeq,
        Benchmark::ReadRand100K,
    ];
    pub const ALL: [Benchmark; 13] = [
        Benchmark::FillSeq,
        Benchmark::FillSeqSync,
        Benchmark::FillSeqBatch,
        Benchmark::FillRandom,
        Benchmark::FillRandSync,
        Benchmark::FillRandBatch,
        Benchmark::Overwrite,
        Benchmark::OverwriteBatch,
        Benchmark::ReadRandom,
        Benchmark::ReadSeq,
        Benchmark::FillRand100K,
        Benchmark::FillSeq100K,
        Benchmark::ReadRand100K,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Benchmark::FillSeq => "fillseq",
            Benchmark::FillSeqSync => "fillseqsync",
            Benchmark::FillSeqBatch => "fillseqbatch",
            Benchmark::FillRandom => "fillrandom",
            Benchmark::FillRandSync => "fillrandsync",
            Benchmark::FillRandBatch => "fillrandbatch",
            Benchmark::Overwrite => "overwrite",
            Benchmark::OverwriteBatch => "overwritebatch",
            Benchmark::ReadRandom => "readrandom",
            Benchmark::ReadSeq => "readseq",
            Benchmark::FillRand100K => "fillrand100K",
            Benchmark::FillSeq100K => "fillseq100K",
            Benchmark::ReadRand100K => "readrand100K",
        }
    }

    pub fn parse(s: &str) -> Option<Benchmark> {
        Benchmark::ALL.into_iter().find(|b| b.name().eq_ignore_ascii_case(s))
    }

    /// A comma-separated list (db_bench's `--benchmarks`); empty names are skipped.
    pub fn parse_list(s: &str) -> Result<Vec<Benchmark>, String> {
        s.split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(|n| Benchmark::parse(n).ok_or_else(|| format!("unknown benchmark '{n}'")))
            .collect()
    }

    /// Writes (the others read).
    pub fn writes(self) -> bool {
        !matches!(self, Benchmark::ReadRandom | Benchmark::ReadSeq | Benchmark::ReadRand100K)
    }

    /// What the benchmark does under `spec` (db_bench's `Run()` dispatch).
    pub fn plan(self, spec: &BenchSpec) -> Plan {
        use Benchmark::*;
        let n = spec.num;
        let batch = if spec.transaction { spec.batch } else { 1 };
        let w = |order, fresh, entries, value_size, per_tx, sync| Plan::Write {
            order,
            fresh,
            entries,
            value_size,
            per_tx,
            sync,
        };
        let vs = spec.value_size;
        match self {
            FillSeq => w(Order::Sequential, true, n, vs, 1, false),
            FillSeqBatch => w(Order::Sequential, true, n, vs, batch, false),
            FillRandom => w(Order::Random, true, n, vs, 1, false),
            FillRandBatch => w(Order::Random, true, n, vs, batch, false),
            Overwrite => w(Order::Random, false, n, vs, 1, false),
            OverwriteBatch => w(Order::Random, false, n, vs, batch, false),
            FillRandSync => w(Order::Random, true, n / 100, vs, 1, true),
            FillSeqSync => w(Order::Sequential, true, n / 100, vs, 1, true),
            FillRand100K => w(Order::Random, true, n / 1000, VALUE_SIZE_100K, 1, false),
            FillSeq100K => w(Order::Sequential, true, n / 1000, VALUE_SIZE_100K, 1, false),
            ReadSeq => Plan::ReadSeq { reads: spec.reads() },
            ReadRandom => Plan::ReadRandom { reads: spec.reads() },
            ReadRand100K => Plan::ReadRandom {
                reads: spec.reads() / 1000,
            },
        }
    }
}

/// What to run; defaults are db_bench_sqlite3's flags.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchSpec {
    /// Run in this order (`--benchmarks`).
    pub benchmarks: Vec<Benchmark>,
    /// Entries (`--num`, 1,000,000).
    pub num: u64,
    /// Reads (`--reads`; `None`: `num`).
    pub reads: Option<u64>,
    /// Bytes of a value (`--value_size`, 100).
    pub value_size: u32,
    /// Entries per transaction of the `*batch` benchmarks (db_bench: 1000).
    pub batch: u32,
    /// `FLAGS_transaction` (true; `--no_transaction` turns it off): batches
    /// are transactions; off, every statement commits alone.
    pub transaction: bool,
    /// `--page_size`; `None`: the connection's (see the module doc).
    pub page_size: Option<u32>,
    /// `--num_pages`: the page cache (`PRAGMA cache_size`, 4096).
    pub cache_pages: u32,
    /// `PRAGMA wal_autocheckpoint` in WAL mode (4096).
    pub wal_autocheckpoint: u32,
    /// `PRAGMA locking_mode = EXCLUSIVE` (db_bench: always; the VFS refuses
    /// it on a transactional device, see the module doc).
    pub exclusive: bool,
    /// `None`: db_bench's (OFF, FULL for the `*sync` benchmarks); `Some`: every write benchmark.
    pub synchronous: Option<Synchronous>,
    /// `--compression_ratio` of the values (0.5).
    pub compression_ratio: f64,
    /// Seed of the random keys.
    pub seed: u64,
}

impl Default for BenchSpec {
    fn default() -> BenchSpec {
        BenchSpec {
            benchmarks: Benchmark::DB_BENCH_DEFAULT.to_vec(),
            num: 1_000_000,
            reads: None,
            value_size: 100,
            batch: DEFAULT_BATCH,
            transaction: true,
            page_size: None,
            cache_pages: 4096,
            wal_autocheckpoint: 4096,
            exclusive: true,
            synchronous: None,
            compression_ratio: 0.5,
            seed: 301,
        }
    }
}

impl BenchSpec {
    pub fn reads(&self) -> u64 {
        self.reads.unwrap_or(self.num)
    }

    /// Refuses a spec the benchmark cannot run, saying why.
    pub fn validate(&self) -> Result<(), BenchError> {
        let bad = |m: String| Err(BenchError::Spec(m));
        if self.num == 0 || self.num > NUM_MAX {
            return bad(format!("num must be in 1..={NUM_MAX}, got {}", self.num));
        }
        if self.reads() > NUM_MAX {
            return bad(format!("reads must be at most {NUM_MAX}, got {}", self.reads()));
        }
        if self.value_size > VALUE_SIZE_MAX {
            return bad(format!("value_size must be at most {VALUE_SIZE_MAX}, got {}", self.value_size));
        }
        if self.batch == 0 || self.batch > BATCH_MAX {
            return bad(format!("batch must be in 1..={BATCH_MAX}, got {}", self.batch));
        }
        if let Some(ps) = self.page_size {
            if !(512..=65536).contains(&ps) || !ps.is_power_of_two() {
                return bad(format!("page_size must be a power of two in 512..=65536, got {ps}"));
            }
        }
        if self.cache_pages == 0 {
            return bad("cache_pages must be at least 1".into());
        }
        if !(self.compression_ratio > 0.0 && self.compression_ratio <= 1.0) {
            return bad(format!("compression_ratio must be in (0, 1], got {}", self.compression_ratio));
        }
        Ok(())
    }
}

/// The key of entry `k`: `%016d`.
pub fn key(k: u64) -> [u8; KEY_BYTES] {
    assert!(k < 10u64.pow(KEY_BYTES as u32), "entry {k} has more than 16 digits");
    let s = format!("{k:016}");
    s.as_bytes().try_into().expect("16 digits")
}

/// What [`run_with`]'s hook is told. `Start` comes after a fresh table was
/// set up; each transaction (an autocommit statement, or a batch with its
/// commit; `readseq`'s one scan) lies between `Begin` and `End`; the WAL
/// checkpoint after a write benchmark between its last `End` and `Finish`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchEvent {
    Start {
        bench: Benchmark,
    },
    Begin {
        bench: Benchmark,
        index: u64,
    },
    /// `ops`: the entries written or rows read in the transaction.
    End {
        bench: Benchmark,
        index: u64,
        ops: u64,
    },
    Finish {
        bench: Benchmark,
    },
}

/// What one benchmark did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BenchResult {
    pub benchmark: Benchmark,
    /// Entries written, or rows read.
    pub operations: u64,
    /// Key and value bytes written or read.
    pub bytes: u64,
    /// Transactions (autocommit statements, batches, or the one scan).
    pub transactions: u64,
    pub value_size: u32,
    /// Random reads that found their key, and that did not.
    pub found: u64,
    pub not_found: u64,
    /// `PRAGMA synchronous` the writes ran at (`None` for reads).
    pub synchronous: Option<Synchronous>,
    /// Whether a WAL checkpoint followed.
    pub checkpointed: bool,
}

/// What a run did, one result per benchmark in the spec's order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BenchReport {
    /// The connection's journal mode, locking mode (`EXCLUSIVE` unless the
    /// spec or the VFS said no) and page size, upper case.
    pub journal_mode: String,
    pub locking_mode: String,
    pub page_size: u32,
    pub results: Vec<BenchResult>,
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("sqlite-bench spec: {0}")]
    Spec(String),
    #[error("SQLite: {0}")]
    Sql(#[from] rusqlite::Error),
}

const CREATE: &str = "CREATE TABLE test (key blob, value blob, PRIMARY KEY (key))";
const REPLACE: &str = "REPLACE INTO test (key, value) VALUES (?, ?)";
const READ: &str = "SELECT * FROM test WHERE key = ?";
const READ_SEQ: &str = "SELECT * FROM test ORDER BY key";

/// Runs `spec.benchmarks` in order.
pub fn run(conn: &Connection, spec: &BenchSpec) -> Result<BenchReport, BenchError> {
    run_with(conn, spec, |_| {})
}

/// [`run`], calling `hook` at each benchmark's start and finish and around each transaction.
pub fn run_with(conn: &Connection, spec: &BenchSpec, mut hook: impl FnMut(&BenchEvent)) -> Result<BenchReport, BenchError> {
    spec.validate()?;
    let synchronous_before: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
    let result = Bench::open(conn, spec).and_then(|mut b| {
        let mut results = Vec::with_capacity(spec.benchmarks.len());
        for &bench in &spec.benchmarks {
            results.push(b.one(bench, &mut hook)?);
        }
        Ok(BenchReport {
            journal_mode: b.journal_mode.clone(),
            locking_mode: b.locking_mode.clone(),
            page_size: b.page_size,
            results,
        })
    });
    if result.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    conn.pragma_update(None, "synchronous", synchronous_before)?;
    result
}

struct Bench<'c> {
    conn: &'c Connection,
    spec: &'c BenchSpec,
    wal: bool,
    journal_mode: String,
    locking_mode: String,
    page_size: u32,
    values: ValueGenerator,
    keys: ChaCha8Rng,
}

impl<'c> Bench<'c> {
    /// db_bench's `Open()` settings on the connection, and the table.
    fn open(conn: &'c Connection, spec: &'c BenchSpec) -> Result<Bench<'c>, BenchError> {
        conn.pragma_update(None, "cache_size", spec.cache_pages)?;
        if let Some(ps) = spec.page_size {
            conn.pragma_update(None, "page_size", ps)?;
        }
        let journal_mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        let wal = journal_mode.eq_ignore_ascii_case("wal");
        if wal {
            conn.pragma_update(None, "wal_autocheckpoint", spec.wal_autocheckpoint)?;
        }
        if spec.exclusive {
            match conn.query_row("PRAGMA locking_mode = EXCLUSIVE", [], |r| r.get::<_, String>(0)) {
                Ok(_) => {}
                // The VFS refuses it on a transactional device (see the module doc).
                Err(e) if e.to_string().contains("locking_mode=EXCLUSIVE") => {}
                Err(e) => return Err(e.into()),
            }
        }
        let locking_mode: String = conn.query_row("PRAGMA locking_mode", [], |r| r.get(0))?;
        conn.execute_batch(&CREATE.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS"))?;
        let page_size: u32 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        if let Some(ps) = spec.page_size {
            if ps != page_size {
                return Err(BenchError::Spec(format!(
                    "the database's page size is {page_size} B (fixed once it has content, or in WAL mode), \
                     the spec asks for {ps}: open it with that page size"
                )));
            }
        }
        let mut keys = ChaCha8Rng::seed_from_u64(spec.seed);
        keys.set_stream(STREAM_KEYS);
        Ok(Bench {
            conn,
            spec,
            wal,
            journal_mode: journal_mode.to_ascii_uppercase(),
            locking_mode: locking_mode.to_ascii_uppercase(),
            page_size,
            values: ValueGenerator::new(spec.compression_ratio),
            keys,
        })
    }

    fn one(&mut self, bench: Benchmark, hook: &mut impl FnMut(&BenchEvent)) -> Result<BenchResult, BenchError> {
        let mut r = BenchResult {
            benchmark: bench,
            operations: 0,
            bytes: 0,
            transactions: 0,
            value_size: 0,
            found: 0,
            not_found: 0,
            synchronous: None,
            checkpointed: false,
        };
        match bench.plan(self.spec) {
            Plan::Write {
                order,
                fresh,
                entries,
                value_size,
                per_tx,
                sync,
            } => {
                if fresh {
                    self.conn
                        .execute_batch(&format!("BEGIN; DROP TABLE IF EXISTS test; {CREATE}; COMMIT"))?;
                }
                let synchronous = self
                    .spec
                    .synchronous
                    .unwrap_or(if sync { Synchronous::Full } else { Synchronous::Off });
                self.conn.pragma_update(None, "synchronous", synchronous.name())?;
                r.synchronous = Some(synchronous);
                r.value_size = value_size;
                hook(&BenchEvent::Start { bench });
                self.write(bench, order, entries, value_size, per_tx, &mut r, hook)?;
                if self.wal {
                    // WalCheckpoint(): flush the log into the database.
                    let _: (i64, i64, i64) = self
                        .conn
                        .query_row("PRAGMA wal_checkpoint(FULL)", [], |x| Ok((x.get(0)?, x.get(1)?, x.get(2)?)))?;
                    r.checkpointed = true;
                }
            }
            Plan::ReadRandom { reads } => {
                hook(&BenchEvent::Start { bench });
                let mut st = self.conn.prepare_cached(READ)?;
                for index in 0..reads {
                    let k = self.keys.gen_range(0..reads);
                    hook(&BenchEvent::Begin { bench, index });
                    let row: Option<(Vec<u8>, Vec<u8>)> = st.query_row([&key(k)[..]], |x| Ok((x.get(0)?, x.get(1)?))).optional()?;
                    hook(&BenchEvent::End { bench, index, ops: 1 });
                    r.operations += 1;
                    r.transactions += 1;
                    match row {
                        Some((kb, vb)) => {
                            r.found += 1;
                            r.bytes += (kb.len() + vb.len()) as u64;
                        }
                        None => r.not_found += 1,
                    }
                }
            }
            Plan::ReadSeq { reads } => {
                hook(&BenchEvent::Start { bench });
                hook(&BenchEvent::Begin { bench, index: 0 });
                {
                    let mut st = self.conn.prepare_cached(READ_SEQ)?;
                    let mut rows = st.query([])?;
                    while r.operations < reads {
                        let Some(x) = rows.next()? else { break };
                        let (kb, vb): (Vec<u8>, Vec<u8>) = (x.get(0)?, x.get(1)?);
                        r.operations += 1;
                        r.bytes += (kb.len() + vb.len()) as u64;
                    }
                }
                hook(&BenchEvent::End {
                    bench,
                    index: 0,
                    ops: r.operations,
                });
                r.transactions = 1;
            }
        }
        hook(&BenchEvent::Finish { bench });
        Ok(r)
    }

    /// db_bench's `Write()`: `entries` REPLACEs, `per_tx` to a transaction.
    #[allow(clippy::too_many_arguments)]
    fn write(
        &mut self,
        bench: Benchmark,
        order: Order,
        entries: u64,
        value_size: u32,
        per_tx: u32,
        r: &mut BenchResult,
        hook: &mut impl FnMut(&BenchEvent),
    ) -> Result<(), BenchError> {
        let mut st = self.conn.prepare_cached(REPLACE)?;
        let mut i = 0u64;
        let mut index = 0u64;
        while i < entries {
            let n = (per_tx as u64).min(entries - i);
            hook(&BenchEvent::Begin { bench, index });
            if per_tx > 1 {
                self.conn.execute_batch("BEGIN TRANSACTION")?;
            }
            for j in 0..n {
                let value = self.values.generate(value_size as usize);
                let k = match order {
                    Order::Sequential => i + j,
                    Order::Random => self.keys.gen_range(0..entries),
                };
                let changed = st.execute((&key(k)[..], value))?;
                assert_eq!(changed, 1, "a REPLACE of one row changed {changed}");
                r.bytes += (KEY_BYTES + value_size as usize) as u64;
            }
            if per_tx > 1 {
                self.conn.execute_batch("END TRANSACTION")?;
            }
            hook(&BenchEvent::End { bench, index, ops: n });
            r.operations += n;
            r.transactions += 1;
            i += n;
            index += 1;
        }
        Ok(())
    }
}
