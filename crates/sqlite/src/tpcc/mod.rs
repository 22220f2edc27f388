//! TPC-C (TPC Benchmark C, standard specification revision 5.11) on real SQLite.
//!
//! What is implemented as the specification says:
//! - the nine tables of clause 1.3 with their columns and primary keys
//!   ([`schema`]; representation of money, rates and dates there), plus the
//!   secondary indexes the transactions need: customers by last name
//!   (Payment and Order-Status by name) and orders by customer (Order-Status's
//!   most recent order); ORDER is named `orders`; one table outside the spec,
//!   `tpcc_load`, records what was loaded (warehouses, scale, seed, C_LAST's C);
//! - the initial population of clause 4.3.3.1 ([`load()`]): 100,000 items; per
//!   warehouse 100,000 stock rows and 10 districts; per district 3,000
//!   customers (C_LAST from the syllables of clause 4.3.2.3, numbers 0..999
//!   for the first 1,000 customers and NURand(255,0,999) beyond), one history
//!   row each, 3,000 orders with O_C_ID a random permutation, the last 900
//!   undelivered and in NEW_ORDER, 5 to 15 order lines each; a-strings,
//!   n-strings, zip codes, "ORIGINAL" in exactly 10% of I_DATA and S_DATA
//!   (rows chosen at random), C_CREDIT "BC" for exactly 10% of customers;
//! - NURand with its constants C (clause 2.1.6): C_LAST, C_ID and OL_I_ID
//!   constants drawn at load, and again for each run, C_LAST's satisfying the
//!   delta rule of clause 2.1.6.1 against the load's (kept in the database);
//! - the five transactions of clause 2 with their input generation and
//!   profiles ([`txn`]): New-Order (1% rolled back on an unused item number,
//!   the last of the order; 1% of the lines supplied by a remote warehouse
//!   when there are several), Payment (60% by last name, 15% through a
//!   remote warehouse when there are several, the "BC" customer's C_DATA
//!   update, the history row), Order-Status (60% by last name), Delivery
//!   (the 10 districts' oldest undelivered orders, a district with none is
//!   skipped and counted), Stock-Level (threshold 10 to 20, the district's
//!   last 20 orders); each in `BEGIN` ... `COMMIT` (New-Order's rollback with
//!   `ROLLBACK`), with prepared statements kept in the connection's cache;
//! - the standard mix (45/43/4/4/4 per 100 transactions) or any mix of five
//!   percentages, dealt from a shuffled deck of 100 cards ([`mix`]);
//! - the consistency conditions 1 to 4 of clause 3.3.2 ([`check()`]).
//!
//! What is not, or differs:
//! - no terminals, no keying or think times, no screens and no output to a
//!   terminal (outputs are computed and dropped), no response-time
//!   constraints (the 90th percentiles of clause 5.2.5), no measurement
//!   interval, no tpmC rule set, no pricing; the transactions run back to
//!   back, on one connection ([`run`]) or on several clients, each its own
//!   connection, interleaved statement by statement in simulated time with
//!   SQLite's locking deciding who waits ([`clients`]);
//! - the home warehouse (a terminal's, in the spec) is drawn uniformly for
//!   each transaction, and so is Stock-Level's district;
//! - Delivery is queued in the spec (deferred execution, clause 2.7.2); here it
//!   runs inline as one database transaction for all 10 districts (the spec
//!   allows one to ten);
//! - with one warehouse, Payment's "remote" 15% picks a random district of the
//!   home warehouse (there is no other warehouse), as is usual;
//! - dates come from the workload's clock, not the operating system's, so a
//!   run is reproducible: the load is at [`LOAD_EPOCH`], transaction `i` of a
//!   run at [`RUN_EPOCH`] + `i` seconds;
//! - the scale divisor ([`TpccSpec::scale`], 1 = the spec) divides the item
//!   count, the customers and orders per district, the undelivered orders per
//!   district and the number of distinct last names (so every run-time last
//!   name exists); NURand values for item numbers, customer numbers and last
//!   names are then reduced modulo the scaled counts, which keeps the skew
//!   but is not the spec's distribution. Anything above 1 is for tests and CI;
//! - of clause 3, only consistency conditions 1 to 4 are checked (not 5 to
//!   12, nor the atomicity, isolation and durability tests); Delivery writes
//!   no result file; a-strings draw from the 62 letters and digits.
//!
//! Hooks: [`run_with`] calls a closure before and after each transaction with
//! its type, so a caller can attribute device or file-system counters (pages
//! written, flash programs) to transaction types by taking deltas.

mod check;
pub mod clients;
mod load;
pub mod mix;
pub mod rand;
pub mod schema;
pub mod txn;

pub use check::{check, fingerprint};
pub use load::load;

use self::rand::{NuConstants, Random, STREAM_RUN_CONSTANTS, STREAM_RUN_DECK, STREAM_RUN_INPUTS};
use rusqlite::{Connection, OptionalExtension};
use serde::Serialize;

/// Districts per warehouse (clause 1.2.1); not scaled.
pub const DISTRICTS: u32 = 10;
/// The spec's cardinalities (clause 4.3.3.1), before the scale divisor.
pub const ITEMS: u32 = 100_000;
pub const CUSTOMERS_PER_DISTRICT: u32 = 3_000;
pub const ORDERS_PER_DISTRICT: u32 = 3_000;
pub const NEW_ORDERS_PER_DISTRICT: u32 = 900;
pub const LAST_NAMES: u32 = 1_000;
/// The standard mix, percent of New-Order, Payment, Order-Status, Delivery,
/// Stock-Level (clause 5.2.3's minimums, New-Order taking the rest).
pub const STANDARD_MIX: [u32; 5] = [45, 43, 4, 4, 4];
/// The load's date and time (2010-02-11, the revision's date), Unix seconds.
pub const LOAD_EPOCH: i64 = 1_265_846_400;
/// The date and time of a run's first transaction (a day after the load).
pub const RUN_EPOCH: i64 = LOAD_EPOCH + 86_400;
/// Statements the transactions keep prepared (the connection's cache is set to this).
pub const STATEMENT_CACHE: usize = 64;
/// Warehouses at most (a bound, not the spec's).
pub const WAREHOUSES_MAX: u32 = 10_000;

/// A deliberately broken transaction, for tests that prove [`check()`] can fail
/// (each breaks one consistency condition of clause 3.3.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum Canary {
    #[default]
    None,
    /// Payment does not add the amount to W_YTD (condition 1).
    PaymentSkipsWarehouseYtd,
    /// New-Order does not insert its NEW_ORDER row (condition 2).
    NewOrderSkipsNewOrderRow,
    /// Delivery deletes the district's second-oldest NEW_ORDER row instead of
    /// the oldest (condition 3).
    DeliveryLeavesAGap,
    /// New-Order inserts one order line fewer than O_OL_CNT (condition 4).
    NewOrderOneLineShort,
}

/// What to load and run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TpccSpec {
    pub warehouses: u32,
    /// Divisor of the item, customer and order counts (1: the spec's; see the module doc).
    pub scale: u32,
    /// Percent of New-Order, Payment, Order-Status, Delivery, Stock-Level; sums to 100.
    pub mix: [u32; 5],
    /// Transactions a run executes.
    pub transactions: u64,
    pub seed: u64,
    /// Test only: a deliberately broken transaction.
    pub canary: Canary,
}

impl Default for TpccSpec {
    fn default() -> TpccSpec {
        TpccSpec {
            warehouses: 1,
            scale: 1,
            mix: STANDARD_MIX,
            transactions: 1_000,
            seed: 1,
            canary: Canary::None,
        }
    }
}

/// The row counts a spec loads (per warehouse or district where named so).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Cardinalities {
    /// Items, and stock rows per warehouse.
    pub items: u32,
    pub customers_per_district: u32,
    pub orders_per_district: u32,
    /// The last orders of each district, undelivered (in NEW_ORDER).
    pub new_orders_per_district: u32,
    /// Distinct last names (numbers 0..last_names-1).
    pub last_names: u32,
}

impl TpccSpec {
    /// Refuses a spec the workload cannot run, saying why.
    pub fn validate(&self) -> Result<(), TpccError> {
        if self.warehouses == 0 || self.warehouses > WAREHOUSES_MAX {
            return Err(TpccError::Spec(format!(
                "warehouses must be in 1..={WAREHOUSES_MAX}, got {}",
                self.warehouses
            )));
        }
        if self.scale == 0 || self.scale > NEW_ORDERS_PER_DISTRICT {
            return Err(TpccError::Spec(format!(
                "scale must be in 1..={NEW_ORDERS_PER_DISTRICT} (a district keeps at least one undelivered order), got {}",
                self.scale
            )));
        }
        mix::validate(self.mix).map_err(TpccError::Spec)
    }

    pub fn cardinalities(&self) -> Cardinalities {
        let s = self.scale.max(1);
        Cardinalities {
            items: ITEMS / s,
            customers_per_district: CUSTOMERS_PER_DISTRICT / s,
            orders_per_district: ORDERS_PER_DISTRICT / s,
            new_orders_per_district: NEW_ORDERS_PER_DISTRICT / s,
            last_names: (LAST_NAMES / s).max(1),
        }
    }
}

/// The five transaction types, in the order of [`TpccSpec::mix`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum TxKind {
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
}

impl TxKind {
    pub const ALL: [TxKind; 5] = [
        TxKind::NewOrder,
        TxKind::Payment,
        TxKind::OrderStatus,
        TxKind::Delivery,
        TxKind::StockLevel,
    ];

    /// Position in [`TxKind::ALL`] and in a mix.
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            TxKind::NewOrder => "New-Order",
            TxKind::Payment => "Payment",
            TxKind::OrderStatus => "Order-Status",
            TxKind::Delivery => "Delivery",
            TxKind::StockLevel => "Stock-Level",
        }
    }

    /// Reads only (their transactions write no page).
    pub fn read_only(self) -> bool {
        matches!(self, TxKind::OrderStatus | TxKind::StockLevel)
    }
}

/// How a transaction ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Outcome {
    Committed,
    /// New-Order's 1%: an unused item number, the whole transaction rolled back.
    RolledBack,
}

/// What [`run_with`]'s hook is told: the start and the end of each
/// transaction (its inputs are already drawn at `Begin`, so only the
/// database work lies between the two).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxEvent {
    Begin { index: u64, kind: TxKind },
    End { index: u64, kind: TxKind, outcome: Outcome },
}

/// Transactions of one type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KindCounts {
    pub count: u64,
    pub committed: u64,
    pub rolled_back: u64,
}

/// What a run did; deterministic for a spec and a database.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TpccReport {
    pub new_order: KindCounts,
    pub payment: KindCounts,
    pub order_status: KindCounts,
    pub delivery: KindCounts,
    pub stock_level: KindCounts,
    /// New-Order transactions committed (orders entered).
    pub new_orders: u64,
    /// Order lines of the committed New-Orders, and of those supplied by another warehouse.
    pub order_lines: u64,
    pub order_lines_remote: u64,
    /// Payments selecting the customer by last name, and through another warehouse.
    pub payments_by_last_name: u64,
    pub payments_remote: u64,
    pub order_status_by_last_name: u64,
    /// Districts a Delivery found no undelivered order in (clause 2.7.4.2).
    pub delivery_skipped_districts: u64,
}

impl TpccReport {
    pub fn kind(&self, kind: TxKind) -> &KindCounts {
        match kind {
            TxKind::NewOrder => &self.new_order,
            TxKind::Payment => &self.payment,
            TxKind::OrderStatus => &self.order_status,
            TxKind::Delivery => &self.delivery,
            TxKind::StockLevel => &self.stock_level,
        }
    }

    fn kind_mut(&mut self, kind: TxKind) -> &mut KindCounts {
        match kind {
            TxKind::NewOrder => &mut self.new_order,
            TxKind::Payment => &mut self.payment,
            TxKind::OrderStatus => &mut self.order_status,
            TxKind::Delivery => &mut self.delivery,
            TxKind::StockLevel => &mut self.stock_level,
        }
    }

    /// Transactions of every type.
    pub fn transactions(&self) -> u64 {
        TxKind::ALL.iter().map(|&k| self.kind(k).count).sum()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TpccError {
    #[error("TPC-C spec: {0}")]
    Spec(String),
    #[error("SQLite: {0}")]
    Sql(#[from] rusqlite::Error),
    /// The database does not hold what the workload expects.
    #[error("TPC-C data: {0}")]
    Data(String),
    /// A client was stopped mid-transaction (another client failed).
    #[error("TPC-C client stopped: {0}")]
    Stopped(String),
}

impl TpccError {
    /// SQLite answered SQLITE_BUSY or SQLITE_LOCKED: another connection's
    /// lock precludes the statement; the client backs off and retries.
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            TpccError::Sql(rusqlite::Error::SqliteFailure(e, _))
                if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        )
    }
}

/// What [`load()`] recorded in the database (table `tpcc_load`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loaded {
    pub warehouses: u32,
    pub scale: u32,
    pub seed: u64,
    /// NURand's C for C_LAST at load (C_LOAD of clause 2.1.6.1).
    pub c_last: u32,
}

impl Loaded {
    pub fn read(conn: &Connection) -> Result<Loaded, TpccError> {
        let tables: i64 = conn.query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'tpcc_load'",
            [],
            |r| r.get(0),
        )?;
        let row = if tables == 0 {
            None
        } else {
            conn.query_row("SELECT warehouses, scale, seed, c_last FROM tpcc_load", [], |r| {
                Ok(Loaded {
                    warehouses: r.get(0)?,
                    scale: r.get(1)?,
                    seed: r.get::<_, i64>(2)? as u64,
                    c_last: r.get(3)?,
                })
            })
            .optional()?
        };
        row.ok_or_else(|| TpccError::Data("no TPC-C load in this database (table tpcc_load missing or empty): load first".into()))
    }
}

/// What every transaction of a run needs to know.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub card: Cardinalities,
    pub warehouses: u32,
    pub nu: NuConstants,
    pub canary: Canary,
}

/// Runs `spec.transactions` transactions of the mix against a loaded database.
pub fn run(conn: &Connection, spec: &TpccSpec) -> Result<TpccReport, TpccError> {
    run_with(conn, spec, |_| {})
}

/// [`run`], calling `hook` before and after each transaction.
pub fn run_with(conn: &Connection, spec: &TpccSpec, mut hook: impl FnMut(&TxEvent)) -> Result<TpccReport, TpccError> {
    let mut runner = Runner::new(conn, spec)?;
    while let Some(next) = runner.next_transaction() {
        hook(&TxEvent::Begin {
            index: next.index,
            kind: next.kind,
        });
        let outcome = runner.execute(conn, &next)?;
        hook(&TxEvent::End {
            index: next.index,
            kind: next.kind,
            outcome,
        });
    }
    Ok(runner.report)
}

/// A transaction drawn from the mix, with its inputs, not yet run.
#[derive(Clone, Debug)]
pub struct NextTx {
    pub index: u64,
    pub kind: TxKind,
    input: txn::Input,
}

impl TxKind {
    /// Does the transaction write (SQLite's single writer applies)?
    pub fn writes(self) -> bool {
        matches!(self, TxKind::NewOrder | TxKind::Payment | TxKind::Delivery)
    }
}

/// The run, one transaction at a time: `next_transaction` draws the next
/// transaction of the mix (type and inputs, in the same order as [`run`]),
/// `execute` runs it on any connection to the database. A driver with
/// several connections (clients) deals the transactions to them.
pub struct Runner {
    ctx: Ctx,
    inputs: Random,
    deck: mix::Deck,
    next: u64,
    transactions: u64,
    pub report: TpccReport,
}

impl Runner {
    /// Checks the spec against the loaded database (through `conn`).
    pub fn new(conn: &Connection, spec: &TpccSpec) -> Result<Runner, TpccError> {
        spec.validate()?;
        let loaded = Loaded::read(conn)?;
        if loaded.warehouses != spec.warehouses || loaded.scale != spec.scale {
            return Err(TpccError::Spec(format!(
                "the database holds {} warehouses at scale 1/{}, the run asks for {} at 1/{}",
                loaded.warehouses, loaded.scale, spec.warehouses, spec.scale
            )));
        }
        let ctx = Ctx {
            card: spec.cardinalities(),
            warehouses: spec.warehouses,
            nu: NuConstants::for_run(&mut Random::new(spec.seed, STREAM_RUN_CONSTANTS), loaded.c_last),
            canary: spec.canary,
        };
        Ok(Runner {
            ctx,
            inputs: Random::new(spec.seed, STREAM_RUN_INPUTS),
            deck: mix::Deck::new(spec.mix, Random::new(spec.seed, STREAM_RUN_DECK)),
            next: 0,
            transactions: spec.transactions,
            report: TpccReport::default(),
        })
    }

    /// The next transaction of the run (`None` after `spec.transactions`).
    pub fn next_transaction(&mut self) -> Option<NextTx> {
        if self.next >= self.transactions {
            return None;
        }
        let kind = self.deck.deal();
        Some(self.draw(kind))
    }

    /// The next transaction of a given type, its inputs drawn from the same
    /// stream as [`Runner::next_transaction`]'s (for scenarios that fix the
    /// sequence of types, such as the crash test's; the mix is not consulted).
    pub fn draw(&mut self, kind: TxKind) -> NextTx {
        let index = self.next;
        self.next += 1;
        let input = txn::Input::generate(kind, &mut self.inputs, &self.ctx, RUN_EPOCH + index as i64);
        input.count(&mut self.report);
        NextTx { index, kind, input }
    }

    /// Makes `tx`, a New-Order, one of the spec's 1% that roll back: its last
    /// line names an unused item number (clause 2.4.1.4), so the whole
    /// transaction runs and then rolls back. False (and `tx` unchanged) for
    /// any other type.
    pub fn force_rollback(&self, tx: &mut NextTx) -> bool {
        let txn::Input::NewOrder(no) = &mut tx.input else {
            return false;
        };
        match no.lines.last_mut() {
            Some(last) => {
                last.i_id = self.ctx.card.items + 1;
                true
            }
            None => false,
        }
    }

    /// Runs `tx` on `conn` (a connection to the loaded database).
    pub fn execute(&mut self, conn: &Connection, tx: &NextTx) -> Result<Outcome, TpccError> {
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        let done = txn::execute(conn, &self.ctx, &tx.input)?;
        self.record(tx, done);
        Ok(done.outcome)
    }

    /// Counts a transaction that ran (by [`Runner::execute`] or a client).
    pub(crate) fn record(&mut self, tx: &NextTx, done: txn::Done) {
        let report = &mut self.report;
        let counts = report.kind_mut(tx.kind);
        counts.count += 1;
        match done.outcome {
            Outcome::Committed => counts.committed += 1,
            Outcome::RolledBack => counts.rolled_back += 1,
        }
        if let txn::Input::NewOrder(no) = &tx.input {
            if done.outcome == Outcome::Committed {
                report.new_orders += 1;
                report.order_lines += no.lines.len() as u64;
                report.order_lines_remote += no.lines.iter().filter(|l| l.supply_w_id != no.w_id).count() as u64;
            }
        }
        report.delivery_skipped_districts += done.skipped_districts as u64;
    }
}
