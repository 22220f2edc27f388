//! YCSB (the Yahoo! Cloud Serving Benchmark) core workload on real SQLite,
//! as YCSB's JDBC binding runs it.
//!
//! Followed (brianfrankcooper/YCSB, `core/src/main/java/site/ycsb/`):
//! - `workloads/CoreWorkload.java`: the parameters, under their property
//!   names ([`YcsbSpec`]: `recordcount`, `operationcount`, `fieldcount` (10),
//!   `fieldlength` (100, constant), `readallfields` (true), `writeallfields`
//!   (false: an update writes one random field), the five proportions,
//!   `requestdistribution`, `maxscanlength`, `scanlengthdistribution`
//!   (uniform), `insertorder` (hashed), `zeropadding` (1)); the operation
//!   chooser (`DiscreteGenerator` over the positive proportions, in the order
//!   read, update, insert, scan, read-modify-write); the key chooser and
//!   `nextKeynum` (a drawn record number above the last inserted is drawn
//!   again); for zipfian, a scrambled zipfian over `recordcount +
//!   (int)(operationcount * insertproportion * 2)` + 1 records (YCSB's
//!   room for the records the run inserts); for latest, `SkewedLatestGenerator`
//!   over the insert sequence; for uniform, `recordcount` records (so a run's
//!   inserts are never read back, as in YCSB); inserts take the next record
//!   number, `recordcount` first; `buildKeyName` (key "user" + FNV-64 hash of
//!   the record number, zero-padded to `zeropadding` digits); record values
//!   as `RandomByteIterator` makes them (printable ASCII);
//! - `generator/ZipfianGenerator.java` (constant 0.99, Gray et al.'s
//!   algorithm, including its incremental zeta and eta recomputed with the
//!   construction's item count), `ScrambledZipfianGenerator.java` (draws over
//!   10^16 items with the precomputed zeta, folded onto the keys by
//!   `Utils.fnvhash64`), `SkewedLatestGenerator.java` ([`generator`]);
//! - `workloads/workloada` to `workloadf`: the six presets ([`Workload`]):
//!   A 50/50 read/update, B 95/5 read/update, C read only, all zipfian; D 95/5
//!   read/insert, latest; E 95/5 scan/insert, zipfian, scans of 1 to 100
//!   records, uniform; F 50/50 read/read-modify-write, zipfian. The files'
//!   recordcount and operationcount are 1,000 ([`YcsbSpec::preset`]);
//! - the JDBC binding (`jdbc/.../JdbcDBClient.java`, `DefaultDBFlavor.java`):
//!   one table `usertable(YCSB_KEY TEXT PRIMARY KEY, FIELD0 TEXT, ...)`, its
//!   statements ([`schema::Statements`]: `SELECT * ... WHERE YCSB_KEY = ?`,
//!   `UPDATE usertable SET FIELDi=? WHERE YCSB_KEY = ?`, `INSERT INTO
//!   usertable (YCSB_KEY,FIELD0,...) VALUES(?,...)`, `SELECT * ... WHERE
//!   YCSB_KEY >= ? ORDER BY YCSB_KEY LIMIT ?`), prepared once and reused; and
//!   its default `autocommit=true`: each operation is its own SQLite
//!   transaction. [`YcsbSpec::batch`] > 1 puts that many operations in each
//!   transaction instead (`BEGIN` ... `COMMIT`), like the binding's
//!   `db.batchsize` with autocommit off.
//!
//! Deviations:
//! - random numbers come from ChaCha8 streams of the seed (one stream for the
//!   load, and one each for the run's operation choice, key choice and
//!   values), not Java's `Random`; YCSB's generators are otherwise followed
//!   in their arithmetic, draw for draw, except that the warm-up draw of the
//!   zipfian and latest generators' constructors is not made;
//! - a read-modify-write reads and updates inside one `BEGIN` ... `COMMIT`
//!   (under JDBC autocommit its two statements are two transactions; the read
//!   one writes nothing, so the device sees the same writes);
//! - with `readallfields=false` a read or scan selects the key and the one
//!   field (the binding selects `*` and drops the other fields in Java);
//! - the default `maxscanlength` is 100 (workload E's file; `CoreWorkload`'s
//!   own default, 1000, applies to no preset); `minscanlength` is 1;
//! - the load commits every [`LOAD_ROWS_PER_TX`] records (YCSB's load
//!   inserts each record in its own transaction under autocommit); it also
//!   creates a table `ycsb_load` recording what was loaded, which a run
//!   checks (record count, field count, key naming);
//! - no `insertstart`/`insertcount` (one client loads everything), no
//!   `hotspot`, `sequential` or `exponential` distributions, constant field
//!   lengths only, no `dataintegrity`, no deletes, one client thread; a
//!   run's inserts assume a freshly loaded database (as YCSB's do): a run
//!   that inserts refuses a database an earlier run already inserted into.
//!
//! Hooks: [`run_with`] calls a closure before and after each operation with
//! its kind, and around each `COMMIT` of a batch, so a caller can time
//! operations on the device clock and attribute device writes to them.

pub mod generator;
mod load;
mod ops;
pub mod schema;

pub use load::{load, Loaded, LOAD_ROWS_PER_TX};
pub use schema::fingerprint;

use generator::{Discrete, ScrambledZipfian, SkewedLatest, Zipfian, ZIPFIAN_CONSTANT};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rusqlite::Connection;
use serde::Serialize;

/// Records at most (YCSB's record numbers are Java `int`s).
pub const RECORDS_MAX: u64 = i32::MAX as u64;
/// Operations of a run at most.
pub const OPERATIONS_MAX: u64 = 1 << 40;
/// Fields per record at most.
pub const FIELDS_MAX: u32 = 100;
/// Bytes per field at most.
pub const FIELD_LENGTH_MAX: u32 = 1 << 20;
/// Records a scan asks for at most.
pub const SCAN_LENGTH_MAX: u32 = 100_000;
/// Operations per transaction at most.
pub const BATCH_MAX: u32 = 1_000_000;
/// Digits of zero padding at most (an FNV hash has at most 19).
pub const ZERO_PADDING_MAX: u32 = 64;
/// Draws `nextKeynum` makes at most before giving up (a record number above
/// the last inserted is drawn again; with YCSB's key spaces nearly every
/// draw is accepted).
pub const KEY_DRAWS_MAX: u32 = 1_000_000;

/// Streams of the seed, one per use, so that changing one parameter (say the
/// field length) leaves the other sequences (operations, keys) as they were.
pub const STREAM_LOAD: u64 = 1;
pub const STREAM_RUN_OPERATIONS: u64 = 2;
pub const STREAM_RUN_KEYS: u64 = 3;
pub const STREAM_RUN_VALUES: u64 = 4;

/// The five operations of `CoreWorkload`, in the operation chooser's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum OpKind {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

impl OpKind {
    pub const ALL: [OpKind; 5] = [OpKind::Read, OpKind::Update, OpKind::Insert, OpKind::Scan, OpKind::ReadModifyWrite];

    pub fn index(self) -> usize {
        self as usize
    }

    /// YCSB's name of the operation (its measurement label).
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "READ",
            OpKind::Update => "UPDATE",
            OpKind::Insert => "INSERT",
            OpKind::Scan => "SCAN",
            OpKind::ReadModifyWrite => "READ-MODIFY-WRITE",
        }
    }

    /// Reads only (writes no page).
    pub fn read_only(self) -> bool {
        matches!(self, OpKind::Read | OpKind::Scan)
    }
}

/// `readproportion`, `updateproportion`, `insertproportion`,
/// `scanproportion`, `readmodifywriteproportion`: weights, normalised by
/// their sum when operations are drawn (as `DiscreteGenerator` does).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Proportions {
    pub read: f64,
    pub update: f64,
    pub insert: f64,
    pub scan: f64,
    pub read_modify_write: f64,
}

impl Proportions {
    /// In [`OpKind::ALL`]'s order.
    pub fn weights(&self) -> [f64; 5] {
        [self.read, self.update, self.insert, self.scan, self.read_modify_write]
    }

    pub fn of(&self, kind: OpKind) -> f64 {
        self.weights()[kind.index()]
    }

    pub fn validate(&self) -> Result<(), String> {
        let w = self.weights();
        if let Some(k) = OpKind::ALL.iter().find(|k| !(w[k.index()].is_finite() && w[k.index()] >= 0.0)) {
            return Err(format!(
                "the {} proportion must be a finite number >= 0, got {}",
                k.name(),
                w[k.index()]
            ));
        }
        if w.iter().sum::<f64>() <= 0.0 {
            return Err("the proportions are all 0: no operation to run".into());
        }
        Ok(())
    }
}

/// The six standard workloads (YCSB's `workloads/workloada`..`workloadf`), or
/// proportions of one's own.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Workload {
    /// Update heavy: 50% reads, 50% updates, zipfian.
    A,
    /// Read mostly: 95% reads, 5% updates, zipfian.
    B,
    /// Read only: 100% reads, zipfian.
    C,
    /// Read latest: 95% reads, 5% inserts, latest.
    D,
    /// Short ranges: 95% scans, 5% inserts, zipfian; scans of 1 to 100 records, uniform.
    E,
    /// Read-modify-write: 50% reads, 50% read-modify-writes, zipfian.
    F,
    /// Proportions given; the request distribution defaults to uniform
    /// (`CoreWorkload`'s default).
    Custom(Proportions),
}

impl Workload {
    pub const STANDARD: [Workload; 6] = [Workload::A, Workload::B, Workload::C, Workload::D, Workload::E, Workload::F];

    pub fn name(&self) -> &'static str {
        match self {
            Workload::A => "A",
            Workload::B => "B",
            Workload::C => "C",
            Workload::D => "D",
            Workload::E => "E",
            Workload::F => "F",
            Workload::Custom(_) => "custom",
        }
    }

    /// "a".."f" (or "workloada".."workloadf"), either case.
    pub fn parse(s: &str) -> Option<Workload> {
        let s = s.to_ascii_lowercase();
        let s = s.strip_prefix("workload").unwrap_or(&s);
        Workload::STANDARD.into_iter().find(|w| w.name().eq_ignore_ascii_case(s))
    }

    /// The parameter file's proportions.
    pub fn proportions(&self) -> Proportions {
        let p = |read, update, insert, scan, read_modify_write| Proportions {
            read,
            update,
            insert,
            scan,
            read_modify_write,
        };
        match *self {
            Workload::A => p(0.5, 0.5, 0.0, 0.0, 0.0),
            Workload::B => p(0.95, 0.05, 0.0, 0.0, 0.0),
            Workload::C => p(1.0, 0.0, 0.0, 0.0, 0.0),
            Workload::D => p(0.95, 0.0, 0.05, 0.0, 0.0),
            Workload::E => p(0.0, 0.0, 0.05, 0.95, 0.0),
            Workload::F => p(0.5, 0.0, 0.0, 0.0, 0.5),
            Workload::Custom(p) => p,
        }
    }

    /// The parameter file's `requestdistribution`.
    pub fn distribution(&self) -> Distribution {
        match self {
            Workload::D => Distribution::Latest,
            Workload::Custom(_) => Distribution::Uniform,
            _ => Distribution::Zipfian,
        }
    }
}

/// `requestdistribution`: how records are picked for reads, updates, scans
/// and read-modify-writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Distribution {
    Uniform,
    /// YCSB's scrambled zipfian (constant 0.99).
    Zipfian,
    /// YCSB's skewed latest: the most recently inserted records are the most popular.
    Latest,
}

impl Distribution {
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Zipfian => "zipfian",
            Distribution::Latest => "latest",
        }
    }
    pub fn parse(s: &str) -> Option<Distribution> {
        [Distribution::Uniform, Distribution::Zipfian, Distribution::Latest]
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(s))
    }
}

/// `scanlengthdistribution`: records a scan asks for, in 1..=maxscanlength.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum ScanLengthDistribution {
    #[default]
    Uniform,
    /// Favouring short scans (a plain, unscrambled zipfian).
    Zipfian,
}

/// `insertorder`: the record number hashed into the key (YCSB's default), or
/// the number itself (keys in insertion order, with enough `zeropadding`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum InsertOrder {
    #[default]
    Hashed,
    Ordered,
}

impl InsertOrder {
    pub fn name(self) -> &'static str {
        match self {
            InsertOrder::Hashed => "hashed",
            InsertOrder::Ordered => "ordered",
        }
    }
}

/// What to load and run. Field names are YCSB's property names.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct YcsbSpec {
    /// The operation mix.
    pub workload: Workload,
    /// Records loaded.
    pub recordcount: u64,
    /// Operations a run executes.
    pub operationcount: u64,
    pub fieldcount: u32,
    /// Bytes of each field.
    pub fieldlength: u32,
    /// `requestdistribution`; `None`: the workload's ([`Workload::distribution`]).
    pub distribution: Option<Distribution>,
    /// Records a scan asks for at most (at least 1).
    pub maxscanlength: u32,
    pub scanlengthdistribution: ScanLengthDistribution,
    /// Reads and scans return every field (true) or one random field.
    pub readallfields: bool,
    /// Updates and read-modify-writes write every field (true) or one random field.
    pub writeallfields: bool,
    pub insertorder: InsertOrder,
    /// Digits the record number in a key is zero-padded to.
    pub zeropadding: u32,
    /// Operations per SQLite transaction (1: autocommit, as the JDBC binding).
    pub batch: u32,
    pub seed: u64,
}

impl Default for YcsbSpec {
    /// Workload A with `CoreWorkload`'s defaults and the parameter files'
    /// 1,000 records and operations.
    fn default() -> YcsbSpec {
        YcsbSpec::preset(Workload::A)
    }
}

impl YcsbSpec {
    /// The workload's parameter file (`workloads/workloada`..`f`): 1,000
    /// records, 1,000 operations, its proportions and distribution, scans of
    /// at most 100 records; the rest `CoreWorkload`'s defaults.
    pub fn preset(workload: Workload) -> YcsbSpec {
        YcsbSpec {
            workload,
            recordcount: 1_000,
            operationcount: 1_000,
            fieldcount: 10,
            fieldlength: 100,
            distribution: None,
            maxscanlength: 100,
            scanlengthdistribution: ScanLengthDistribution::Uniform,
            readallfields: true,
            writeallfields: false,
            insertorder: InsertOrder::Hashed,
            zeropadding: 1,
            batch: 1,
            seed: 1,
        }
    }

    /// The request distribution in force.
    pub fn request_distribution(&self) -> Distribution {
        self.distribution.unwrap_or_else(|| self.workload.distribution())
    }

    pub fn proportions(&self) -> Proportions {
        self.workload.proportions()
    }

    /// Refuses a spec the workload cannot run, saying why.
    pub fn validate(&self) -> Result<(), YcsbError> {
        let bad = |m: String| Err(YcsbError::Spec(m));
        self.proportions().validate().map_err(YcsbError::Spec)?;
        if self.recordcount == 0 || self.recordcount > RECORDS_MAX {
            return bad(format!("recordcount must be in 1..={RECORDS_MAX}, got {}", self.recordcount));
        }
        if self.request_distribution() == Distribution::Latest && self.recordcount < 3 {
            return bad(format!("the latest distribution needs recordcount >= 3, got {}", self.recordcount));
        }
        if self.operationcount > OPERATIONS_MAX {
            return bad(format!(
                "operationcount must be at most {OPERATIONS_MAX}, got {}",
                self.operationcount
            ));
        }
        let inserts_max = self.operationcount as f64 * self.proportions().insert;
        if self.proportions().insert > 0.0 && self.recordcount as f64 + inserts_max > RECORDS_MAX as f64 {
            return bad(format!(
                "recordcount {} and the run's inserts could pass {RECORDS_MAX} records",
                self.recordcount
            ));
        }
        if self.fieldcount == 0 || self.fieldcount > FIELDS_MAX {
            return bad(format!("fieldcount must be in 1..={FIELDS_MAX}, got {}", self.fieldcount));
        }
        if self.fieldlength > FIELD_LENGTH_MAX {
            return bad(format!("fieldlength must be at most {FIELD_LENGTH_MAX}, got {}", self.fieldlength));
        }
        if self.maxscanlength == 0 || self.maxscanlength > SCAN_LENGTH_MAX {
            return bad(format!(
                "maxscanlength must be in 1..={SCAN_LENGTH_MAX}, got {}",
                self.maxscanlength
            ));
        }
        if self.batch == 0 || self.batch > BATCH_MAX {
            return bad(format!("batch must be in 1..={BATCH_MAX}, got {}", self.batch));
        }
        if self.zeropadding > ZERO_PADDING_MAX {
            return bad(format!("zeropadding must be at most {ZERO_PADDING_MAX}, got {}", self.zeropadding));
        }
        Ok(())
    }

    /// The key of record `keynum`.
    pub fn key(&self, keynum: u64) -> String {
        schema::key_name(keynum, self.zeropadding, self.insertorder)
    }
}

/// What [`run_with`]'s hook is told. Between `Begin` and `End` lies only the
/// operation's database work (its inputs are drawn before `Begin`); with
/// `batch` = 1 that includes its commit. With `batch` > 1 a group's `COMMIT`
/// comes between `CommitBegin` and `CommitEnd`, after the group's last `End`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpEvent {
    Begin {
        index: u64,
        kind: OpKind,
    },
    /// `found`: the record (a scan: at least one record) was there; an insert: inserted.
    End {
        index: u64,
        kind: OpKind,
        found: bool,
    },
    CommitBegin {
        ops: u32,
    },
    CommitEnd {
        ops: u32,
    },
}

/// Operations of one kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KindCounts {
    pub count: u64,
    /// Reads, updates and read-modify-writes that found their record, scans
    /// that returned at least one, inserts done.
    pub found: u64,
    pub not_found: u64,
}

/// What a run did; deterministic for a spec and a database.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct YcsbReport {
    pub read: KindCounts,
    pub update: KindCounts,
    pub insert: KindCounts,
    pub scan: KindCounts,
    pub read_modify_write: KindCounts,
    /// Records the scans asked for, and returned.
    pub scan_records_asked: u64,
    pub scan_records: u64,
    /// SQLite transactions (groups of `batch` operations).
    pub transactions: u64,
    /// Records in the table after the run (the load's and the run's inserts).
    pub records: u64,
}

impl YcsbReport {
    pub fn kind(&self, kind: OpKind) -> &KindCounts {
        match kind {
            OpKind::Read => &self.read,
            OpKind::Update => &self.update,
            OpKind::Insert => &self.insert,
            OpKind::Scan => &self.scan,
            OpKind::ReadModifyWrite => &self.read_modify_write,
        }
    }

    fn kind_mut(&mut self, kind: OpKind) -> &mut KindCounts {
        match kind {
            OpKind::Read => &mut self.read,
            OpKind::Update => &mut self.update,
            OpKind::Insert => &mut self.insert,
            OpKind::Scan => &mut self.scan,
            OpKind::ReadModifyWrite => &mut self.read_modify_write,
        }
    }

    /// Operations of every kind.
    pub fn operations(&self) -> u64 {
        OpKind::ALL.iter().map(|&k| self.kind(k).count).sum()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum YcsbError {
    #[error("YCSB spec: {0}")]
    Spec(String),
    #[error("SQLite: {0}")]
    Sql(#[from] rusqlite::Error),
    /// The database does not hold what the workload expects.
    #[error("YCSB data: {0}")]
    Data(String),
}

/// The key chooser (`CoreWorkload.keychooser`).
enum KeyChooser {
    Uniform { max: u64 },
    Zipfian(ScrambledZipfian),
    Latest(SkewedLatest),
}

/// The run's generators and the insert sequence.
pub(crate) struct Gen {
    ops: Discrete<OpKind>,
    keys: KeyChooser,
    scan_length: Option<Zipfian>,
    /// Streams: operation choice, key choice, values (fields, lengths).
    ops_rng: ChaCha8Rng,
    keys_rng: ChaCha8Rng,
    pub values_rng: ChaCha8Rng,
    /// Records in the table: record numbers `0..records` exist (YCSB's
    /// acknowledged insert sequence: its `lastValue()` is `records - 1`).
    pub records: u64,
}

fn stream(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

impl Gen {
    fn new(spec: &YcsbSpec) -> Gen {
        let p = spec.proportions();
        let ops = Discrete::new(&OpKind::ALL.map(|k| (p.of(k), k)));
        let keys = match spec.request_distribution() {
            Distribution::Uniform => KeyChooser::Uniform { max: spec.recordcount - 1 },
            Distribution::Zipfian => {
                let expected_new_keys = (spec.operationcount as f64 * p.insert * 2.0) as u64;
                KeyChooser::Zipfian(ScrambledZipfian::new(0, spec.recordcount + expected_new_keys))
            }
            Distribution::Latest => KeyChooser::Latest(SkewedLatest::new(spec.recordcount - 1)),
        };
        let scan_length = match spec.scanlengthdistribution {
            ScanLengthDistribution::Uniform => None,
            ScanLengthDistribution::Zipfian => Some(Zipfian::new(1, spec.maxscanlength as u64, ZIPFIAN_CONSTANT)),
        };
        Gen {
            ops,
            keys,
            scan_length,
            ops_rng: stream(spec.seed, STREAM_RUN_OPERATIONS),
            keys_rng: stream(spec.seed, STREAM_RUN_KEYS),
            values_rng: stream(spec.seed, STREAM_RUN_VALUES),
            records: spec.recordcount,
        }
    }

    fn operation(&mut self) -> OpKind {
        self.ops.next(&mut self.ops_rng)
    }

    /// `nextKeynum`: a record number, drawn again while above the last inserted.
    fn keynum(&mut self) -> Result<u64, YcsbError> {
        let last = self.records - 1;
        for _ in 0..KEY_DRAWS_MAX {
            let k = match &mut self.keys {
                KeyChooser::Uniform { max } => self.keys_rng.gen_range(0..=*max),
                KeyChooser::Zipfian(z) => z.next(&mut self.keys_rng),
                KeyChooser::Latest(l) => l.next(last, &mut self.keys_rng),
            };
            if k <= last {
                return Ok(k);
            }
        }
        Err(YcsbError::Spec(format!(
            "{KEY_DRAWS_MAX} key draws all above the last record {last}"
        )))
    }

    /// A field number, uniform (`fieldchooser`).
    fn field(&mut self, fieldcount: u32) -> usize {
        self.values_rng.gen_range(0..fieldcount as usize)
    }

    /// Records a scan asks for (`scanlength`).
    fn scan_length(&mut self, max: u32) -> u32 {
        match &mut self.scan_length {
            None => self.values_rng.gen_range(1..=max),
            Some(z) => z.next(&mut self.values_rng) as u32,
        }
    }
}

/// Runs `spec.operationcount` operations against a loaded database.
pub fn run(conn: &Connection, spec: &YcsbSpec) -> Result<YcsbReport, YcsbError> {
    run_with(conn, spec, |_| {})
}

/// [`run`], calling `hook` before and after each operation (and each batch's commit).
pub fn run_with(conn: &Connection, spec: &YcsbSpec, mut hook: impl FnMut(&OpEvent)) -> Result<YcsbReport, YcsbError> {
    spec.validate()?;
    let loaded = Loaded::read(conn)?;
    loaded.matches(spec)?;
    let sql = schema::Statements::new(spec.fieldcount);
    conn.set_prepared_statement_cache_capacity(2 * FIELDS_MAX as usize + 8);
    if spec.proportions().insert > 0.0 {
        // A run's inserts start at record `recordcount`: refuse a database
        // whose earlier run already inserted it (YCSB would fail each insert).
        let first = spec.key(spec.recordcount);
        if ops::exists(conn, &first)? {
            return Err(YcsbError::Data(format!(
                "record {} ({first}) already exists: an earlier run inserted into this database; load afresh",
                spec.recordcount
            )));
        }
    }
    let mut gen = Gen::new(spec);
    let mut report = YcsbReport::default();
    let result = run_ops(conn, spec, &sql, &mut gen, &mut report, &mut hook);
    if result.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    result?;
    report.records = gen.records;
    Ok(report)
}

fn run_ops(
    conn: &Connection,
    spec: &YcsbSpec,
    sql: &schema::Statements,
    gen: &mut Gen,
    report: &mut YcsbReport,
    hook: &mut impl FnMut(&OpEvent),
) -> Result<(), YcsbError> {
    let batch = spec.batch as u64;
    let mut in_group = 0u32;
    for index in 0..spec.operationcount {
        let kind = gen.operation();
        let op = ops::Op::generate(kind, spec, gen)?;
        if batch > 1 && in_group == 0 {
            conn.execute_batch("BEGIN")?;
        }
        hook(&OpEvent::Begin { index, kind });
        let done = op.execute(conn, sql, batch == 1)?;
        if kind == OpKind::Insert {
            gen.records += 1;
        }
        let counts = report.kind_mut(kind);
        counts.count += 1;
        if done.found {
            counts.found += 1;
        } else {
            counts.not_found += 1;
        }
        if let ops::Op::Scan { length, .. } = op {
            report.scan_records_asked += length as u64;
            report.scan_records += done.records;
        }
        hook(&OpEvent::End {
            index,
            kind,
            found: done.found,
        });
        in_group += 1;
        if batch == 1 {
            report.transactions += 1;
            in_group = 0;
        } else if in_group as u64 == batch || index + 1 == spec.operationcount {
            hook(&OpEvent::CommitBegin { ops: in_group });
            conn.execute_batch("COMMIT")?;
            hook(&OpEvent::CommitEnd { ops: in_group });
            report.transactions += 1;
            in_group = 0;
        }
    }
    Ok(())
}
