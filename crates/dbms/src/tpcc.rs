//! TPC-C as page accesses: the nine tables laid out as heaps of DB pages,
//! and the five transaction profiles as the pages each reads and writes.
//!
//! Flag Commit replays page-access traces of DBT-2 on PostgreSQL 8.4 (sec.
//! 5.1), which are not available; this generator follows the TPC-C
//! specification's profiles (clauses 2.4 to 2.8) instead. Rows are packed
//! into 8 KB heap pages as PostgreSQL packs them (24-byte page header,
//! 28 bytes of tuple header and item pointer a row), which gives the page
//! counts of the full-size database; the layout then scales every table by
//! one factor so that the database fits the budget of DB pages, keeping its
//! key space: a key maps to the page at its proportional position in its
//! table (`Layout::page`), so skew (NURand) and clustering by warehouse and
//! district survive the scaling.
//!
//! Inserts go to fixed-size circular slots per district (orders, new-orders
//! and order lines in order-id order, history in arrival order): the
//! database keeps its size over a run, as the paper's fixed 2 GB does.

use crate::error::{DbmsError, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::BTreeMap;

/// The nine TPC-C tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Table {
    Warehouse,
    District,
    Customer,
    History,
    NewOrder,
    Order,
    OrderLine,
    Item,
    Stock,
}

const DISTRICTS: u64 = 10;
const CUSTOMERS: u64 = 3_000;
const ITEMS: u64 = 100_000;
/// New-order rows a district holds (orders 2,101 to 3,000 after the load).
const NEW_ORDERS: u64 = 900;
/// Order-line slots an order gets in its district's circular range: the
/// mean order has 10 lines (5 to 15).
const LINES_PER_ORDER: u64 = 10;
/// An 8 KB heap page as PostgreSQL fills it.
const HEAP_PAGE_BYTES: u64 = 8_192;
const HEAP_PAGE_HEADER: u64 = 24;
const ROW_OVERHEAD: u64 = 28;

impl Table {
    pub const ALL: [Table; 9] = [
        Table::Warehouse,
        Table::District,
        Table::Customer,
        Table::History,
        Table::NewOrder,
        Table::Order,
        Table::OrderLine,
        Table::Item,
        Table::Stock,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Table::Warehouse => "warehouse",
            Table::District => "district",
            Table::Customer => "customer",
            Table::History => "history",
            Table::NewOrder => "new_order",
            Table::Order => "order",
            Table::OrderLine => "order_line",
            Table::Item => "item",
            Table::Stock => "stock",
        }
    }

    /// Row bytes (TPC-C clause 1.3's field sizes, summed).
    fn row_bytes(self) -> u64 {
        match self {
            Table::Warehouse => 89,
            Table::District => 95,
            Table::Customer => 655,
            Table::History => 46,
            Table::NewOrder => 8,
            Table::Order => 24,
            Table::OrderLine => 54,
            Table::Item => 82,
            Table::Stock => 306,
        }
    }

    /// Rows of the full-size database (clause 4.3.3.1): the key space.
    fn rows(self, warehouses: u64) -> u64 {
        let districts = warehouses * DISTRICTS;
        match self {
            Table::Warehouse => warehouses,
            Table::District => districts,
            Table::Customer | Table::History | Table::Order => districts * CUSTOMERS,
            Table::NewOrder => districts * NEW_ORDERS,
            Table::OrderLine => districts * CUSTOMERS * LINES_PER_ORDER,
            Table::Item => ITEMS,
            Table::Stock => warehouses * ITEMS,
        }
    }

    /// One row a page: the warehouse and district rows every New-Order and
    /// Payment locks. TPC-C implementations on page- or block-locking
    /// engines pad these two tables so (Oracle's full disclosures: PCTFREE
    /// 99); packed, all 20 warehouses share one page and page locking runs
    /// the whole mix one transaction at a time.
    fn padded(self) -> bool {
        matches!(self, Table::Warehouse | Table::District)
    }

    fn full_pages(self, warehouses: u64) -> u64 {
        if self.padded() {
            return self.rows(warehouses);
        }
        let per_page = (HEAP_PAGE_BYTES - HEAP_PAGE_HEADER) / (self.row_bytes() + ROW_OVERHEAD);
        self.rows(warehouses).div_ceil(per_page)
    }
}

/// One table's place in the database.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TableLayout {
    pub table: Table,
    /// Rows (keys) of the full-size table.
    pub rows: u64,
    /// Its pages at full size, and as laid out.
    pub full_pages: u64,
    pub pages: u32,
    pub first_page: u32,
}

/// The database: every table's pages, scaled to a budget.
#[derive(Clone, Debug, Serialize)]
pub struct Layout {
    pub warehouses: u32,
    /// Pages laid out over pages of the full-size database.
    pub scale: f64,
    pub tables: Vec<TableLayout>,
    /// DB pages the tables occupy (at most the budget).
    pub pages: u32,
}

impl Layout {
    /// The layout of `warehouses` warehouses in at most `budget` DB pages:
    /// every table gets the same share of its full size, and one page at least.
    pub fn new(warehouses: u32, budget: u32) -> Result<Layout> {
        let tables = Table::ALL.len() as u64;
        if warehouses == 0 || (budget as u64) < tables {
            return Err(DbmsError::Config(format!(
                "{warehouses} warehouses in {budget} pages: at least one warehouse and {tables} pages are needed"
            )));
        }
        let w = warehouses as u64;
        let full_total: u64 = Table::ALL.iter().map(|t| t.full_pages(w)).sum();
        let padded: u64 = Table::ALL.iter().filter(|t| t.padded()).map(|t| t.full_pages(w)).sum();
        let others = Table::ALL.iter().filter(|t| !t.padded()).count() as u64;
        // The padded tables keep their size while the budget allows (a
        // page each of the other tables beside them): scaling them would
        // bring back the hot page they are padded against.
        let keep_padded = padded + others <= budget as u64;
        let (scaled_full, scaled_budget) = if keep_padded {
            (full_total - padded, budget as u64 - padded)
        } else {
            (full_total, budget as u64)
        };
        let scaled_count = if keep_padded { others } else { tables };
        // Each scaled table's floor of its share, plus the one page each may
        // be bumped to, stays within the budget.
        let room = if scaled_full <= scaled_budget {
            scaled_full
        } else {
            scaled_budget - scaled_count
        };
        let mut first_page = 0u32;
        let mut laid = Vec::with_capacity(Table::ALL.len());
        for table in Table::ALL {
            let full_pages = table.full_pages(w);
            let pages = if keep_padded && table.padded() {
                full_pages as u32
            } else {
                (full_pages as u128 * room as u128 / scaled_full as u128).max(1) as u32
            };
            laid.push(TableLayout {
                table,
                rows: table.rows(w),
                full_pages,
                pages,
                first_page,
            });
            first_page += pages;
        }
        assert!(
            first_page <= budget,
            "the layout's {first_page} pages overflow the budget of {budget}"
        );
        Ok(Layout {
            warehouses,
            scale: first_page as f64 / full_total as f64,
            tables: laid,
            pages: first_page,
        })
    }

    fn of(&self, table: Table) -> &TableLayout {
        &self.tables[table as usize]
    }

    /// The record of key `key` of `table`: its DB page and its slot there
    /// (the key's position among the keys the page holds).
    pub fn record(&self, table: Table, key: u64) -> (u32, u32) {
        let page = self.page(table, key);
        let t = self.of(table);
        let at = (page - t.first_page) as u128;
        // The page's first key: the smallest k with k * pages / rows >= at.
        let first = (at * t.rows as u128).div_ceil(t.pages as u128) as u64;
        let slot = key % t.rows - first;
        debug_assert!(slot < u32::MAX as u64, "{} key {key}: slot {slot}", table.name());
        (page, slot as u32)
    }

    /// The DB page holding key `key` of `table` (keys in [0, rows)).
    pub fn page(&self, table: Table, key: u64) -> u32 {
        let t = self.of(table);
        debug_assert!(key < t.rows, "{} key {key} out of its {} rows", table.name(), t.rows);
        let at = (key % t.rows) as u128 * t.pages as u128 / t.rows as u128;
        t.first_page + at as u32
    }
}

/// The five transaction profiles and their mix (clause 5.2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Profile {
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
}

impl Profile {
    pub const ALL: [Profile; 5] = [
        Profile::NewOrder,
        Profile::Payment,
        Profile::OrderStatus,
        Profile::Delivery,
        Profile::StockLevel,
    ];
    /// Percent of transactions.
    pub const MIX: [u32; 5] = [45, 43, 4, 4, 4];

    pub fn name(self) -> &'static str {
        match self {
            Profile::NewOrder => "new-order",
            Profile::Payment => "payment",
            Profile::OrderStatus => "order-status",
            Profile::Delivery => "delivery",
            Profile::StockLevel => "stock-level",
        }
    }
}

/// One page access: a read (shared lock) or a write (exclusive lock).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Access {
    pub page: u32,
    pub write: bool,
}

/// One record access: a read (shared lock) or a write (exclusive lock) of
/// record `slot` of DB page `page` (record-level locking).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RecordAccess {
    pub page: u32,
    pub slot: u32,
    pub write: bool,
}

/// A transaction: its accesses in order, and whether it ends in an injected
/// rollback (delta) instead of a commit. A restart runs the same plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxPlan {
    pub profile: Profile,
    pub accesses: Vec<Access>,
    /// The same accesses record by record (a page's records in the order
    /// the profile touches them), for record-level locking: the pages are
    /// those of `accesses`, the cap cuts the same ones.
    pub records: Vec<RecordAccess>,
    pub abort: bool,
    /// Accesses dropped at the page cap (`max_pages_per_tx`).
    pub truncated: u32,
}

impl TxPlan {
    /// Distinct pages only read, and distinct pages written.
    pub fn pages_read_written(&self) -> (u32, u32) {
        let mut pages: BTreeMap<u32, bool> = BTreeMap::new();
        for a in &self.accesses {
            *pages.entry(a.page).or_default() |= a.write;
        }
        let written = pages.values().filter(|&&w| w).count() as u32;
        (pages.len() as u32 - written, written)
    }
}

/// Builds a plan: one access per page and mode (a read of a page already
/// read or written, a write of one already written, add nothing; a write
/// of one read is the lock upgrade), at most `cap` distinct pages.
struct PlanBuilder {
    accesses: Vec<Access>,
    modes: BTreeMap<u32, bool>,
    records: Vec<RecordAccess>,
    record_modes: BTreeMap<(u32, u32), bool>,
    cap: u32,
    truncated: u32,
}

impl PlanBuilder {
    fn new(cap: u32) -> PlanBuilder {
        PlanBuilder {
            accesses: Vec::new(),
            modes: BTreeMap::new(),
            records: Vec::new(),
            record_modes: BTreeMap::new(),
            cap,
            truncated: 0,
        }
    }

    /// An access of record `(page, slot)`: the page's access by the page
    /// rule, then, if the page is within the cap, the record's by the same
    /// rule (one access per record and mode, a write after a read the upgrade).
    fn access(&mut self, (page, slot): (u32, u32), write: bool) {
        self.page_access(page, write);
        if !self.modes.contains_key(&page) {
            return;
        }
        let rec = RecordAccess { page, slot, write };
        match self.record_modes.get(&(page, slot)).copied() {
            Some(w) if w || !write => {}
            _ => {
                self.record_modes.insert((page, slot), write);
                self.records.push(rec);
            }
        }
    }

    fn page_access(&mut self, page: u32, write: bool) {
        match self.modes.get(&page).copied() {
            Some(w) if w || !write => {}
            Some(_) => {
                self.modes.insert(page, true);
                self.accesses.push(Access { page, write });
            }
            None if self.modes.len() as u32 >= self.cap => self.truncated += 1,
            None => {
                self.modes.insert(page, write);
                self.accesses.push(Access { page, write });
            }
        }
    }
}

/// NURand's constants C (clause 2.1.6), drawn once per run.
#[derive(Clone, Copy, Debug)]
struct NuConstants {
    c_last: u64,
    c_id: u64,
    ol_i_id: u64,
}

/// Draws transactions: the profile by the mix, the inputs by the
/// specification's distributions, all from one ChaCha8 stream of the seed.
pub struct Generator {
    layout: Layout,
    rng: ChaCha8Rng,
    nu: NuConstants,
    abort_pct: u32,
    cap: u32,
    /// Plans writing fewer or more distinct pages are drawn and skipped.
    pages_written: (u32, u32),
    /// Plans drawn and skipped so.
    pub skipped: u64,
    /// Per district: the next order id, the oldest undelivered one, the
    /// next history slot (ids grow; slots are ids modulo the district's range).
    next_order: Vec<u64>,
    next_delivery: Vec<u64>,
    next_history: Vec<u64>,
}

impl Generator {
    pub fn new(layout: Layout, seed: u64, abort_pct: u32, max_pages_per_tx: u32) -> Generator {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // A stream of its own: the back-off draws never shift the plans.
        rng.set_stream(1);
        let nu = NuConstants {
            c_last: rng.gen_range(0..=255),
            c_id: rng.gen_range(0..=1023),
            ol_i_id: rng.gen_range(0..=8191),
        };
        let districts = (layout.warehouses as u64 * DISTRICTS) as usize;
        Generator {
            layout,
            rng,
            nu,
            abort_pct,
            cap: max_pages_per_tx,
            pages_written: (0, u32::MAX),
            skipped: 0,
            next_order: vec![CUSTOMERS; districts],
            next_delivery: vec![CUSTOMERS - NEW_ORDERS; districts],
            next_history: vec![0; districts],
        }
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    fn uniform(&mut self, lo: u64, hi: u64) -> u64 {
        self.rng.gen_range(lo..=hi)
    }

    /// NURand(A, x, y) (clause 2.1.6).
    fn nurand(&mut self, a: u64, x: u64, y: u64, c: u64) -> u64 {
        (((self.uniform(0, a) | self.uniform(x, y)) + c) % (y - x + 1)) + x
    }

    /// Another warehouse than `w` (or `w` when there is only one).
    fn other_warehouse(&mut self, w: u64) -> u64 {
        let n = self.layout.warehouses as u64;
        if n == 1 {
            return w;
        }
        (w + self.uniform(1, n - 1)) % n
    }

    /// Only plans writing `lo..=hi` distinct pages from now on (a trace
    /// split by transaction size, Fig. 18).
    pub fn with_pages_written(mut self, (lo, hi): (u32, u32)) -> Generator {
        assert!(lo <= hi && lo <= self.cap, "pages written {lo}..={hi} selects no plan");
        self.pages_written = (lo, hi);
        self
    }

    /// The next transaction (of the selected sizes).
    pub fn next_plan(&mut self) -> TxPlan {
        let (lo, hi) = self.pages_written;
        for _ in 0..1_000_000 {
            let plan = self.draw_plan();
            if (lo..=hi).contains(&plan.pages_read_written().1) {
                return plan;
            }
            self.skipped += 1;
        }
        panic!("no plan writing {lo}..={hi} pages in a million draws");
    }

    fn draw_plan(&mut self) -> TxPlan {
        let draw = self.uniform(1, 100) as u32;
        let mut acc = 0;
        let profile = Profile::ALL
            .into_iter()
            .zip(Profile::MIX)
            .find(|&(_, pct)| {
                acc += pct;
                draw <= acc
            })
            .map_or(Profile::StockLevel, |(p, _)| p);
        let mut b = PlanBuilder::new(self.cap);
        let w = self.uniform(0, self.layout.warehouses as u64 - 1);
        match profile {
            Profile::NewOrder => self.new_order(&mut b, w),
            Profile::Payment => self.payment(&mut b, w),
            Profile::OrderStatus => self.order_status(&mut b, w),
            Profile::Delivery => self.delivery(&mut b, w),
            Profile::StockLevel => self.stock_level(&mut b, w),
        }
        let abort = self.uniform(1, 100) as u32 <= self.abort_pct;
        debug_assert!(b.modes.len() as u32 <= self.cap);
        TxPlan {
            profile,
            accesses: b.accesses,
            records: b.records,
            abort,
            truncated: b.truncated,
        }
    }

    fn record(&self, table: Table, key: u64) -> (u32, u32) {
        self.layout.record(table, key)
    }

    fn district_key(w: u64, d: u64) -> u64 {
        w * DISTRICTS + d
    }

    /// Customer `c` (0-based) of district `(w, d)`.
    fn customer(&self, w: u64, d: u64, c: u64) -> (u32, u32) {
        self.record(Table::Customer, Self::district_key(w, d) * CUSTOMERS + c)
    }

    /// The customers a lookup reads, the one it picks last: by last name
    /// (60%), the name's first-loaded customer (c < 1,000 carry names by
    /// number, clause 4.3.3.1) and two more of the same name; else by id.
    fn customer_lookup(&mut self, w: u64, d: u64) -> (Vec<(u32, u32)>, (u32, u32)) {
        if self.uniform(1, 100) <= 60 {
            let n = self.nurand(255, 0, 999, self.nu.c_last);
            let others = [self.uniform(1_000, CUSTOMERS - 1), self.uniform(1_000, CUSTOMERS - 1)];
            let pages = vec![
                self.customer(w, d, n),
                self.customer(w, d, others[0]),
                self.customer(w, d, others[1]),
            ];
            let picked = pages[1];
            (pages, picked)
        } else {
            let c = self.nurand(1023, 1, CUSTOMERS, self.nu.c_id) - 1;
            let p = self.customer(w, d, c);
            (vec![p], p)
        }
    }

    fn order_slot(&self, w: u64, d: u64, o: u64) -> u64 {
        Self::district_key(w, d) * CUSTOMERS + o % CUSTOMERS
    }

    fn order_line(&self, w: u64, d: u64, o: u64, line: u64) -> (u32, u32) {
        let per_district = CUSTOMERS * LINES_PER_ORDER;
        let slot = ((o % CUSTOMERS) * LINES_PER_ORDER + line) % per_district;
        self.record(Table::OrderLine, Self::district_key(w, d) * per_district + slot)
    }

    /// Clause 2.4: read the warehouse, bump the district's next order id,
    /// read the customer, read each item and update its stock, insert the
    /// order, its new-order row and its lines.
    fn new_order(&mut self, b: &mut PlanBuilder, w: u64) {
        let d = self.uniform(0, DISTRICTS - 1);
        let dk = Self::district_key(w, d);
        b.access(self.record(Table::Warehouse, w), false);
        b.access(self.record(Table::District, dk), true);
        let c = self.nurand(1023, 1, CUSTOMERS, self.nu.c_id) - 1;
        b.access(self.customer(w, d, c), false);
        let lines = self.uniform(5, 15);
        for _ in 0..lines {
            let i = self.nurand(8191, 1, ITEMS, self.nu.ol_i_id) - 1;
            let supply = if self.uniform(1, 100) == 1 { self.other_warehouse(w) } else { w };
            b.access(self.record(Table::Item, i), false);
            b.access(self.record(Table::Stock, supply * ITEMS + i), true);
        }
        let o = self.next_order[dk as usize];
        self.next_order[dk as usize] += 1;
        b.access(self.record(Table::Order, self.order_slot(w, d, o)), true);
        b.access(self.record(Table::NewOrder, dk * NEW_ORDERS + o % NEW_ORDERS), true);
        for line in 0..lines {
            b.access(self.order_line(w, d, o, line), true);
        }
    }

    /// Clause 2.5: update the warehouse's and the district's year-to-date,
    /// find the customer (15% in another warehouse) and update it, insert
    /// a history row.
    fn payment(&mut self, b: &mut PlanBuilder, w: u64) {
        let d = self.uniform(0, DISTRICTS - 1);
        b.access(self.record(Table::Warehouse, w), true);
        b.access(self.record(Table::District, Self::district_key(w, d)), true);
        let (cw, cd) = if self.uniform(1, 100) <= 85 {
            (w, d)
        } else {
            (self.other_warehouse(w), self.uniform(0, DISTRICTS - 1))
        };
        let (read, picked) = self.customer_lookup(cw, cd);
        read.into_iter().for_each(|p| b.access(p, false));
        b.access(picked, true);
        let dk = Self::district_key(w, d) as usize;
        let h = self.next_history[dk];
        self.next_history[dk] += 1;
        b.access(self.record(Table::History, dk as u64 * CUSTOMERS + h % CUSTOMERS), true);
    }

    /// Clause 2.6: find the customer, read its last order and that order's lines.
    fn order_status(&mut self, b: &mut PlanBuilder, w: u64) {
        let d = self.uniform(0, DISTRICTS - 1);
        let (read, _) = self.customer_lookup(w, d);
        read.into_iter().for_each(|p| b.access(p, false));
        // The customer's last order: one of the district's, uniformly.
        let o = self.uniform(0, CUSTOMERS - 1);
        b.access(self.record(Table::Order, self.order_slot(w, d, o)), false);
        for line in 0..LINES_PER_ORDER {
            b.access(self.order_line(w, d, o, line), false);
        }
    }

    /// Clause 2.7: in each district, delete the oldest new-order, mark its
    /// order delivered, stamp its lines and credit its customer.
    fn delivery(&mut self, b: &mut PlanBuilder, w: u64) {
        for d in 0..DISTRICTS {
            let dk = Self::district_key(w, d) as usize;
            if self.next_delivery[dk] >= self.next_order[dk] {
                continue; // nothing to deliver in this district (clause 2.7.4.2)
            }
            let o = self.next_delivery[dk];
            self.next_delivery[dk] += 1;
            b.access(self.record(Table::NewOrder, dk as u64 * NEW_ORDERS + o % NEW_ORDERS), true);
            b.access(self.record(Table::Order, self.order_slot(w, d, o)), true);
            for line in 0..LINES_PER_ORDER {
                b.access(self.order_line(w, d, o, line), true);
            }
            let c = self.uniform(0, CUSTOMERS - 1);
            b.access(self.customer(w, d, c), true);
        }
    }

    /// Clause 2.8: read the district, the lines of its last 20 orders and
    /// the stock of their items (some 200 rows: cut at the page cap).
    fn stock_level(&mut self, b: &mut PlanBuilder, w: u64) {
        let d = self.uniform(0, DISTRICTS - 1);
        let dk = Self::district_key(w, d);
        b.access(self.record(Table::District, dk), false);
        let next = self.next_order[dk as usize];
        for o in next.saturating_sub(20)..next {
            for line in 0..LINES_PER_ORDER {
                b.access(self.order_line(w, d, o, line), false);
            }
        }
        for _ in 0..20 * LINES_PER_ORDER {
            let i = self.nurand(8191, 1, ITEMS, self.nu.ol_i_id) - 1;
            b.access(self.record(Table::Stock, w * ITEMS + i), false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_size_layout_is_the_papers_database() {
        let l = Layout::new(20, u32::MAX).unwrap();
        assert_eq!(l.scale, 1.0);
        // 8 KB pages: within PostgreSQL's ~2 GB for 20 warehouses (sec. 5.1,
        // which counts indexes this layout leaves out).
        let bytes = l.pages as u64 * 8192;
        assert!((1 << 30..2 << 30).contains(&bytes), "{bytes}");
    }

    #[test]
    fn a_scaled_layout_fits_its_budget_and_keeps_every_table() {
        for budget in [9, 10, 64, 226, 227, 1000, 50_000] {
            let l = Layout::new(20, budget).unwrap();
            assert!(l.pages <= budget, "{budget}: {}", l.pages);
            assert!(l.tables.iter().all(|t| t.pages >= 1));
            let last = l.tables.last().unwrap();
            assert_eq!(last.first_page + last.pages, l.pages);
            for t in &l.tables {
                assert_eq!(l.page(t.table, 0), t.first_page);
                assert_eq!(l.page(t.table, t.rows - 1), t.first_page + t.pages - 1);
            }
        }
        assert!(Layout::new(20, 8).is_err());
        // With room, a warehouse and a district a page each, never scaled.
        let l = Layout::new(20, 16_384).unwrap();
        assert_eq!((l.tables[0].pages, l.tables[1].pages), (20, 200));
        assert_ne!(l.page(Table::Warehouse, 0), l.page(Table::Warehouse, 1));
    }

    #[test]
    fn a_page_s_records_are_its_keys_numbered_from_zero() {
        let l = Layout::new(2, 40).unwrap();
        for t in &l.tables {
            let mut last: Option<(u32, u32)> = None;
            for key in (0..t.rows).step_by((t.rows / 5_000).max(1) as usize) {
                let (page, slot) = l.record(t.table, key);
                assert_eq!(page, l.page(t.table, key));
                match last {
                    Some((p, s)) if p == page => assert!(slot > s, "{:?} key {key}", t.table),
                    _ => assert!(key == 0 || slot < 1 + (t.rows / t.pages as u64) as u32, "{:?} key {key}", t.table),
                }
                last = Some((page, slot));
            }
            assert_eq!(l.record(t.table, 0), (t.first_page, 0));
        }
    }

    #[test]
    fn a_split_keeps_the_sizes_asked_for_from_the_same_stream() {
        let layout = Layout::new(20, 200_000).unwrap();
        let all: Vec<TxPlan> = {
            let mut g = Generator::new(layout.clone(), 9, 5, 49);
            (0..400).map(|_| g.next_plan()).collect()
        };
        let mut short = Generator::new(layout.clone(), 9, 5, 49).with_pages_written((0, 10));
        let mut long = Generator::new(layout, 9, 5, 49).with_pages_written((11, u32::MAX));
        let s: Vec<TxPlan> = (0..100).map(|_| short.next_plan()).collect();
        let l: Vec<TxPlan> = (0..100).map(|_| long.next_plan()).collect();
        assert!(s.iter().all(|p| p.pages_read_written().1 <= 10));
        assert!(l.iter().all(|p| p.pages_read_written().1 > 10));
        // The subtraces are the full trace filtered: its first short plans, in order.
        let first_short: Vec<&TxPlan> = all.iter().filter(|p| p.pages_read_written().1 <= 10).take(100).collect();
        assert_eq!(s.iter().collect::<Vec<_>>(), first_short);
        assert!(short.skipped > 0 && long.skipped > 0);
    }

    #[test]
    fn plans_follow_the_mix_stay_under_the_cap_and_repeat_from_a_seed() {
        let layout = Layout::new(20, 200_000).unwrap();
        let mut g = Generator::new(layout.clone(), 7, 5, 49);
        let plans: Vec<TxPlan> = (0..4000).map(|_| g.next_plan()).collect();
        let mut again = Generator::new(layout, 7, 5, 49);
        assert!(plans.iter().all(|p| *p == again.next_plan()));
        let share = |p: Profile| plans.iter().filter(|t| t.profile == p).count() as f64 / plans.len() as f64;
        assert!((share(Profile::NewOrder) - 0.45).abs() < 0.03);
        assert!((share(Profile::Payment) - 0.43).abs() < 0.03);
        let aborts = plans.iter().filter(|t| t.abort).count() as f64 / plans.len() as f64;
        assert!((aborts - 0.05).abs() < 0.015, "{aborts}");
        for p in &plans {
            let (r, w) = p.pages_read_written();
            assert!(r + w <= 49 && r + w >= 1, "{p:?}");
            let read_only = matches!(p.profile, Profile::OrderStatus | Profile::StockLevel);
            assert_eq!(w == 0, read_only, "{p:?}");
        }
        // Stock-level's 200 stock rows meet the cap.
        assert!(plans.iter().any(|p| p.profile == Profile::StockLevel && p.truncated > 0));
    }

    #[test]
    fn a_write_after_a_read_is_one_upgrade_and_repeats_add_nothing() {
        let mut b = PlanBuilder::new(2);
        for (p, s, w) in [
            (1, 0, false),
            (1, 0, false),
            (1, 0, true),
            (1, 1, true),
            (1, 0, false),
            (2, 5, true),
            (3, 0, false),
        ] {
            b.access((p, s), w);
        }
        let got: Vec<(u32, bool)> = b.accesses.iter().map(|a| (a.page, a.write)).collect();
        assert_eq!(got, vec![(1, false), (1, true), (2, true)]);
        assert_eq!(b.truncated, 1);
        let recs: Vec<(u32, u32, bool)> = b.records.iter().map(|a| (a.page, a.slot, a.write)).collect();
        assert_eq!(
            recs,
            vec![(1, 0, false), (1, 0, true), (1, 1, true), (2, 5, true)],
            "page 3 is past the cap"
        );
    }
}
