//! The five transactions of clause 2: each one's input generation (the
//! clause's x.1, done before the transaction starts, as a terminal would) and
//! its profile (x.2), one database transaction each.

use super::rand::{last_name, Random, A_C_ID, A_C_LAST, A_OL_I_ID};
use super::{Canary, Ctx, Outcome, TpccError, TpccReport, TxKind, DISTRICTS};
use rusqlite::{params, CachedStatement, Connection, OptionalExtension};

/// How a transaction names its customer (clauses 2.5.1.2, 2.6.1.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CustomerKey {
    Id(u32),
    LastName(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineInput {
    pub i_id: u32,
    pub supply_w_id: u32,
    pub quantity: u32,
}

/// Clause 2.4.1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewOrderInput {
    pub w_id: u32,
    pub d_id: u32,
    pub c_id: u32,
    /// The last line's item is unused (not in ITEM) for the 1% rolled back.
    pub lines: Vec<LineInput>,
    pub entry_d: i64,
}

/// Clause 2.5.1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentInput {
    pub w_id: u32,
    pub d_id: u32,
    pub c_w_id: u32,
    pub c_d_id: u32,
    pub customer: CustomerKey,
    /// Cents.
    pub h_amount: i64,
    pub h_date: i64,
}

/// Clause 2.6.1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderStatusInput {
    pub w_id: u32,
    pub d_id: u32,
    pub customer: CustomerKey,
}

/// Clause 2.7.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliveryInput {
    pub w_id: u32,
    pub carrier_id: u32,
    pub delivery_d: i64,
}

/// Clause 2.8.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StockLevelInput {
    pub w_id: u32,
    pub d_id: u32,
    pub threshold: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    NewOrder(NewOrderInput),
    Payment(PaymentInput),
    OrderStatus(OrderStatusInput),
    Delivery(DeliveryInput),
    StockLevel(StockLevelInput),
}

/// A warehouse other than `home`, uniformly (home itself when it is the only one).
fn other_warehouse(r: &mut Random, ctx: &Ctx, home: u32) -> u32 {
    if ctx.warehouses == 1 {
        return home;
    }
    let w = r.uniform(1, ctx.warehouses - 1);
    if w >= home {
        w + 1
    } else {
        w
    }
}

/// NURand(1023, 1, 3000), reduced to the scaled customer count.
fn customer_id(r: &mut Random, ctx: &Ctx) -> u32 {
    (r.nurand(A_C_ID, 1, 3000, ctx.nu.c_id) - 1) % ctx.card.customers_per_district + 1
}

/// 60% by last name (NURand(255, 0, 999), reduced to the scaled names), else by number.
fn customer_key(r: &mut Random, ctx: &Ctx) -> CustomerKey {
    if r.percent(60) {
        CustomerKey::LastName(last_name(r.nurand(A_C_LAST, 0, 999, ctx.nu.c_last) % ctx.card.last_names))
    } else {
        CustomerKey::Id(customer_id(r, ctx))
    }
}

impl Input {
    /// Draws the inputs of a transaction of type `kind` at time `now`.
    pub(crate) fn generate(kind: TxKind, r: &mut Random, ctx: &Ctx, now: i64) -> Input {
        let w_id = r.uniform(1, ctx.warehouses);
        match kind {
            TxKind::NewOrder => {
                let d_id = r.uniform(1, DISTRICTS);
                let c_id = customer_id(r, ctx);
                let ol_cnt = r.uniform(5, 15);
                let rbk = r.uniform(1, 100);
                let lines = (1..=ol_cnt)
                    .map(|n| {
                        let i_id = if n == ol_cnt && rbk == 1 {
                            ctx.card.items + 1
                        } else {
                            (r.nurand(A_OL_I_ID, 1, 100_000, ctx.nu.ol_i_id) - 1) % ctx.card.items + 1
                        };
                        let supply_w_id = if r.uniform(1, 100) > 1 {
                            w_id
                        } else {
                            other_warehouse(r, ctx, w_id)
                        };
                        LineInput {
                            i_id,
                            supply_w_id,
                            quantity: r.uniform(1, 10),
                        }
                    })
                    .collect();
                Input::NewOrder(NewOrderInput {
                    w_id,
                    d_id,
                    c_id,
                    lines,
                    entry_d: now,
                })
            }
            TxKind::Payment => {
                let d_id = r.uniform(1, DISTRICTS);
                let (c_w_id, c_d_id) = if r.uniform(1, 100) <= 85 {
                    (w_id, d_id)
                } else {
                    let c_d_id = r.uniform(1, DISTRICTS);
                    (other_warehouse(r, ctx, w_id), c_d_id)
                };
                let customer = customer_key(r, ctx);
                Input::Payment(PaymentInput {
                    w_id,
                    d_id,
                    c_w_id,
                    c_d_id,
                    customer,
                    h_amount: r.uniform(100, 500_000) as i64,
                    h_date: now,
                })
            }
            TxKind::OrderStatus => {
                let d_id = r.uniform(1, DISTRICTS);
                Input::OrderStatus(OrderStatusInput {
                    w_id,
                    d_id,
                    customer: customer_key(r, ctx),
                })
            }
            TxKind::Delivery => Input::Delivery(DeliveryInput {
                w_id,
                carrier_id: r.uniform(1, 10),
                delivery_d: now,
            }),
            TxKind::StockLevel => Input::StockLevel(StockLevelInput {
                w_id,
                d_id: r.uniform(1, DISTRICTS),
                threshold: r.uniform(10, 20),
            }),
        }
    }

    pub fn kind(&self) -> TxKind {
        match self {
            Input::NewOrder(_) => TxKind::NewOrder,
            Input::Payment(_) => TxKind::Payment,
            Input::OrderStatus(_) => TxKind::OrderStatus,
            Input::Delivery(_) => TxKind::Delivery,
            Input::StockLevel(_) => TxKind::StockLevel,
        }
    }

    /// Counts what the inputs ask for (by name, remote) in the report.
    pub(crate) fn count(&self, report: &mut TpccReport) {
        match self {
            Input::Payment(p) => {
                report.payments_by_last_name += matches!(p.customer, CustomerKey::LastName(_)) as u64;
                report.payments_remote += (p.c_w_id != p.w_id) as u64;
            }
            Input::OrderStatus(o) => {
                report.order_status_by_last_name += matches!(o.customer, CustomerKey::LastName(_)) as u64;
            }
            _ => {}
        }
    }
}

/// How a transaction went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    pub outcome: Outcome,
    /// Delivery: districts without an undelivered order.
    pub skipped_districts: u32,
}

/// A connection, and the point where its client yields between statements
/// (several clients interleave statement by statement, see
/// [`super::clients`]; alone, a client never yields).
pub(crate) struct Db<'c> {
    pub conn: &'c Connection,
    pause: &'c dyn Fn() -> Result<(), TpccError>,
}

impl<'c> Db<'c> {
    pub fn new(conn: &'c Connection, pause: &'c dyn Fn() -> Result<(), TpccError>) -> Db<'c> {
        Db { conn, pause }
    }

    /// The statement `sql` from the connection's cache, after yielding: every
    /// statement of a transaction goes through here, so each is one step.
    pub fn prepare_cached(&self, sql: &str) -> Result<CachedStatement<'c>, TpccError> {
        (self.pause)()?;
        Ok(self.conn.prepare_cached(sql)?)
    }

    /// Rolls back the open transaction, if SQLite left one open (after an error).
    pub fn rollback_if_open(&self) {
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

/// Runs one transaction in `BEGIN` ... `COMMIT` (or `ROLLBACK` for New-Order's
/// unused item). On an error the transaction is rolled back and the error returned.
pub(crate) fn execute(conn: &Connection, ctx: &Ctx, input: &Input) -> Result<Done, TpccError> {
    let db = Db::new(conn, &|| Ok(()));
    let ended = begin_and_body(&db, ctx, input, "BEGIN").and_then(|done| {
        db.prepare_cached(done.outcome.end_statement())?.execute([])?;
        Ok(done)
    });
    if ended.is_err() {
        db.rollback_if_open();
    }
    ended
}

/// `begin` (`BEGIN`, or `BEGIN IMMEDIATE`) and the transaction's statements,
/// up to (not including) its `COMMIT` or `ROLLBACK`, which the caller issues
/// (and may retry).
pub(crate) fn begin_and_body(db: &Db, ctx: &Ctx, input: &Input, begin: &str) -> Result<Done, TpccError> {
    db.prepare_cached(begin)?.execute([])?;
    let mut skipped_districts = 0;
    let outcome = match input {
        Input::NewOrder(i) => new_order(db, ctx, i),
        Input::Payment(i) => payment(db, ctx, i),
        Input::OrderStatus(i) => order_status(db, i),
        Input::Delivery(i) => delivery(db, ctx, i).map(|skipped| {
            skipped_districts = skipped;
            Outcome::Committed
        }),
        Input::StockLevel(i) => stock_level(db, i),
    }?;
    Ok(Done {
        outcome,
        skipped_districts,
    })
}

impl Outcome {
    /// The statement that ends a transaction with this outcome.
    pub(crate) fn end_statement(self) -> &'static str {
        match self {
            Outcome::Committed => "COMMIT",
            Outcome::RolledBack => "ROLLBACK",
        }
    }
}

/// The customer at position ceil(n/2) of those named `last` in the district,
/// sorted by first name (clause 2.5.2.2).
fn customer_by_last_name(conn: &Db, w_id: u32, d_id: u32, last: &str) -> Result<u32, TpccError> {
    let mut st =
        conn.prepare_cached("SELECT c_id FROM customer WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_last = ?3 ORDER BY c_first, c_id")?;
    let ids = st
        .query_map(params![w_id, d_id, last], |r| r.get::<_, u32>(0))?
        .collect::<Result<Vec<u32>, _>>()?;
    if ids.is_empty() {
        return Err(TpccError::Data(format!(
            "no customer named {last} in district {d_id} of warehouse {w_id}"
        )));
    }
    Ok(ids[(ids.len() - 1) / 2])
}

fn customer_id_of(conn: &Db, w_id: u32, d_id: u32, key: &CustomerKey) -> Result<u32, TpccError> {
    match key {
        CustomerKey::Id(c) => Ok(*c),
        CustomerKey::LastName(last) => customer_by_last_name(conn, w_id, d_id, last),
    }
}

/// S_DIST_xx of district xx.
const STOCK_SELECT: [&str; DISTRICTS as usize] = [
    "SELECT s_quantity, s_dist_01, s_data FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_02, s_data FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_03, s_data FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_04, s_data FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_05, s_data FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_06, s_data FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_07, s_data FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_08, s_data FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_09, s_data FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_10, s_data FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
];

/// Clause 2.4.2.2.
fn new_order(conn: &Db, ctx: &Ctx, i: &NewOrderInput) -> Result<Outcome, TpccError> {
    let w_tax: f64 = conn
        .prepare_cached("SELECT w_tax FROM warehouse WHERE w_id = ?1")?
        .query_row([i.w_id], |r| r.get(0))?;
    let (d_tax, o_id): (f64, i64) = conn
        .prepare_cached("SELECT d_tax, d_next_o_id FROM district WHERE d_w_id = ?1 AND d_id = ?2")?
        .query_row(params![i.w_id, i.d_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    conn.prepare_cached("UPDATE district SET d_next_o_id = ?3 WHERE d_w_id = ?1 AND d_id = ?2")?
        .execute(params![i.w_id, i.d_id, o_id + 1])?;
    let (c_discount, _c_last, _c_credit): (f64, String, String) = conn
        .prepare_cached("SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3")?
        .query_row(params![i.w_id, i.d_id, i.c_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    let all_local = i.lines.iter().all(|l| l.supply_w_id == i.w_id);
    conn.prepare_cached(
        "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) \
         VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?7)",
    )?
    .execute(params![o_id, i.d_id, i.w_id, i.c_id, i.entry_d, i.lines.len(), all_local as i64])?;
    if ctx.canary != Canary::NewOrderSkipsNewOrderRow {
        conn.prepare_cached("INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?1, ?2, ?3)")?
            .execute(params![o_id, i.d_id, i.w_id])?;
    }
    let mut total_cents = 0i64;
    for (n, line) in i.lines.iter().enumerate() {
        let item: Option<(i64, String, String)> = conn
            .prepare_cached("SELECT i_price, i_name, i_data FROM item WHERE i_id = ?1")?
            .query_row([line.i_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        // Clause 2.4.2.3: an unused item number rolls the whole transaction back.
        let Some((price, _name, i_data)) = item else {
            return Ok(Outcome::RolledBack);
        };
        let (s_quantity, dist_info, s_data): (i64, String, String) = conn
            .prepare_cached(STOCK_SELECT[i.d_id as usize - 1])?
            .query_row(params![line.supply_w_id, line.i_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        let quantity = line.quantity as i64;
        let s_quantity = if s_quantity >= quantity + 10 {
            s_quantity - quantity
        } else {
            s_quantity - quantity + 91
        };
        let remote = (line.supply_w_id != i.w_id) as i64;
        conn.prepare_cached(
            "UPDATE stock SET s_quantity = ?3, s_ytd = s_ytd + ?4, s_order_cnt = s_order_cnt + 1, \
             s_remote_cnt = s_remote_cnt + ?5 WHERE s_w_id = ?1 AND s_i_id = ?2",
        )?
        .execute(params![line.supply_w_id, line.i_id, s_quantity, quantity, remote])?;
        let amount = quantity * price;
        total_cents += amount;
        let _brand_generic = if i_data.contains("ORIGINAL") && s_data.contains("ORIGINAL") {
            'B'
        } else {
            'G'
        };
        if ctx.canary == Canary::NewOrderOneLineShort && n + 1 == i.lines.len() {
            continue;
        }
        conn.prepare_cached(
            "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, \
             ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, ?7, ?8, ?9)",
        )?
        .execute(params![
            o_id,
            i.d_id,
            i.w_id,
            n + 1,
            line.i_id,
            line.supply_w_id,
            quantity,
            amount,
            dist_info
        ])?;
    }
    let _total_amount = total_cents as f64 / 100.0 * (1.0 - c_discount) * (1.0 + w_tax + d_tax);
    Ok(Outcome::Committed)
}

/// An amount of cents as the spec prints it: 1234.56.
fn money(cents: i64) -> String {
    format!("{}{}.{:02}", if cents < 0 { "-" } else { "" }, cents.abs() / 100, cents.abs() % 100)
}

/// C_DATA holds at most 500 characters.
const C_DATA_MAX: usize = 500;

/// Clause 2.5.2.2.
fn payment(conn: &Db, ctx: &Ctx, i: &PaymentInput) -> Result<Outcome, TpccError> {
    let w_name: String = conn
        .prepare_cached("SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse WHERE w_id = ?1")?
        .query_row([i.w_id], |r| r.get(0))?;
    if ctx.canary != Canary::PaymentSkipsWarehouseYtd {
        conn.prepare_cached("UPDATE warehouse SET w_ytd = w_ytd + ?2 WHERE w_id = ?1")?
            .execute(params![i.w_id, i.h_amount])?;
    }
    let d_name: String = conn
        .prepare_cached("SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district WHERE d_w_id = ?1 AND d_id = ?2")?
        .query_row(params![i.w_id, i.d_id], |r| r.get(0))?;
    conn.prepare_cached("UPDATE district SET d_ytd = d_ytd + ?3 WHERE d_w_id = ?1 AND d_id = ?2")?
        .execute(params![i.w_id, i.d_id, i.h_amount])?;
    let c_id = customer_id_of(conn, i.c_w_id, i.c_d_id, &i.customer)?;
    let c_credit: String = conn
        .prepare_cached(
            "SELECT c_credit, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, \
             c_since, c_credit_lim, c_discount, c_balance FROM customer WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
        )?
        .query_row(params![i.c_w_id, i.c_d_id, c_id], |r| r.get(0))?;
    conn.prepare_cached(
        "UPDATE customer SET c_balance = c_balance - ?4, c_ytd_payment = c_ytd_payment + ?4, \
         c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
    )?
    .execute(params![i.c_w_id, i.c_d_id, c_id, i.h_amount])?;
    if c_credit == "BC" {
        let c_data: String = conn
            .prepare_cached("SELECT c_data FROM customer WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3")?
            .query_row(params![i.c_w_id, i.c_d_id, c_id], |r| r.get(0))?;
        // The payment's C_ID, C_D_ID, C_W_ID, D_ID, W_ID and H_AMOUNT at the
        // left, the old data shifted right, cut at 500 characters.
        let mut data = format!("{} {} {} {} {} {} ", c_id, i.c_d_id, i.c_w_id, i.d_id, i.w_id, money(i.h_amount));
        data.push_str(&c_data);
        data.truncate(C_DATA_MAX);
        conn.prepare_cached("UPDATE customer SET c_data = ?4 WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3")?
            .execute(params![i.c_w_id, i.c_d_id, c_id, data])?;
    }
    let h_data = format!("{w_name}    {d_name}");
    conn.prepare_cached(
        "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![c_id, i.c_d_id, i.c_w_id, i.d_id, i.w_id, i.h_date, i.h_amount, h_data])?;
    Ok(Outcome::Committed)
}

/// Clause 2.6.2.2.
fn order_status(conn: &Db, i: &OrderStatusInput) -> Result<Outcome, TpccError> {
    let c_id = customer_id_of(conn, i.w_id, i.d_id, &i.customer)?;
    let _balance: i64 = conn
        .prepare_cached("SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3")?
        .query_row(params![i.w_id, i.d_id, c_id], |r| r.get(0))?;
    // The most recent order, found through the orders-by-customer index
    // (with ORDER BY o_id DESC LIMIT 1, SQLite walks the district's orders
    // backwards by primary key instead).
    let order: Option<(i64, i64, Option<i64>)> = conn
        .prepare_cached(
            "SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = ?1 AND o_d_id = ?2 AND o_id = \
             (SELECT max(o_id) FROM orders WHERE o_w_id = ?1 AND o_d_id = ?2 AND o_c_id = ?3)",
        )?
        .query_row(params![i.w_id, i.d_id, c_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    let Some((o_id, _entry_d, _carrier)) = order else {
        return Err(TpccError::Data(format!(
            "customer {c_id} of district {} of warehouse {} has no order",
            i.d_id, i.w_id
        )));
    };
    let mut st = conn.prepare_cached(
        "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line \
         WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id = ?3",
    )?;
    let mut rows = st.query(params![i.w_id, i.d_id, o_id])?;
    while let Some(row) = rows.next()? {
        let _line: (i64, i64, i64, i64, Option<i64>) = (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?);
    }
    Ok(Outcome::Committed)
}

/// Clause 2.7.4.2: the oldest undelivered order of each district. Returns the
/// number of districts that had none.
fn delivery(conn: &Db, ctx: &Ctx, i: &DeliveryInput) -> Result<u32, TpccError> {
    let mut skipped = 0;
    for d_id in 1..=DISTRICTS {
        let oldest: Option<i64> = conn
            .prepare_cached("SELECT min(no_o_id) FROM new_order WHERE no_w_id = ?1 AND no_d_id = ?2")?
            .query_row(params![i.w_id, d_id], |r| r.get(0))?;
        let Some(o_id) = oldest else {
            skipped += 1;
            continue;
        };
        let deleted = if ctx.canary == Canary::DeliveryLeavesAGap {
            let second: Option<i64> = conn
                .prepare_cached("SELECT no_o_id FROM new_order WHERE no_w_id = ?1 AND no_d_id = ?2 AND no_o_id > ?3 LIMIT 1")?
                .query_row(params![i.w_id, d_id, o_id], |r| r.get(0))
                .optional()?;
            second.unwrap_or(o_id)
        } else {
            o_id
        };
        conn.prepare_cached("DELETE FROM new_order WHERE no_w_id = ?1 AND no_d_id = ?2 AND no_o_id = ?3")?
            .execute(params![i.w_id, d_id, deleted])?;
        let c_id: i64 = conn
            .prepare_cached("SELECT o_c_id FROM orders WHERE o_w_id = ?1 AND o_d_id = ?2 AND o_id = ?3")?
            .query_row(params![i.w_id, d_id, o_id], |r| r.get(0))?;
        conn.prepare_cached("UPDATE orders SET o_carrier_id = ?4 WHERE o_w_id = ?1 AND o_d_id = ?2 AND o_id = ?3")?
            .execute(params![i.w_id, d_id, o_id, i.carrier_id])?;
        conn.prepare_cached("UPDATE order_line SET ol_delivery_d = ?4 WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id = ?3")?
            .execute(params![i.w_id, d_id, o_id, i.delivery_d])?;
        let amount: i64 = conn
            .prepare_cached("SELECT coalesce(sum(ol_amount), 0) FROM order_line WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id = ?3")?
            .query_row(params![i.w_id, d_id, o_id], |r| r.get(0))?;
        conn.prepare_cached(
            "UPDATE customer SET c_balance = c_balance + ?4, c_delivery_cnt = c_delivery_cnt + 1 \
             WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
        )?
        .execute(params![i.w_id, d_id, c_id, amount])?;
    }
    Ok(skipped)
}

/// Clause 2.8.2.2: distinct items of the district's last 20 orders whose
/// stock at the home warehouse is below the threshold.
fn stock_level(conn: &Db, i: &StockLevelInput) -> Result<Outcome, TpccError> {
    let next_o_id: i64 = conn
        .prepare_cached("SELECT d_next_o_id FROM district WHERE d_w_id = ?1 AND d_id = ?2")?
        .query_row(params![i.w_id, i.d_id], |r| r.get(0))?;
    let _low_stock: i64 = conn
        .prepare_cached(
            "SELECT count(DISTINCT s_i_id) FROM order_line, stock \
             WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id < ?3 AND ol_o_id >= ?3 - 20 \
             AND s_w_id = ?1 AND s_i_id = ol_i_id AND s_quantity < ?4",
        )?
        .query_row(params![i.w_id, i.d_id, next_o_id, i.threshold], |r| r.get(0))?;
    Ok(Outcome::Committed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_prints_two_decimals() {
        assert_eq!(money(123456), "1234.56");
        assert_eq!(money(5), "0.05");
        assert_eq!(money(-1000), "-10.00");
    }
}
