//! The initial population (clause 4.3.3.1), generated from the seed.
//!
//! Tables in the spec's order: ITEM, then per warehouse WAREHOUSE, STOCK,
//! DISTRICT, and per district CUSTOMER with HISTORY, ORDER with ORDER_LINE and
//! NEW_ORDER. Committed every [`ROWS_PER_TX`] rows, so that no transaction
//! outgrows a transactional device's table of open pages.

use super::rand::{last_name, NuConstants, Random, A_C_LAST, STREAM_LOAD};
use super::{schema, Cardinalities, TpccError, TpccSpec, DISTRICTS, LOAD_EPOCH, STATEMENT_CACHE};
use rusqlite::{params, Connection};

/// Rows inserted per load transaction.
pub const ROWS_PER_TX: u32 = 1_000;

/// Creates the tables and fills them for `spec` (its warehouses, scale and
/// seed). Refuses a database that already has the tables.
pub fn load(conn: &Connection, spec: &TpccSpec) -> Result<(), TpccError> {
    spec.validate()?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    let result = Loader::new(conn, spec).and_then(|mut l| l.all());
    if result.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    result
}

struct Loader<'c> {
    conn: &'c Connection,
    card: Cardinalities,
    warehouses: u32,
    rng: Random,
    nu: NuConstants,
    /// Rows inserted in the open transaction.
    rows_in_tx: u32,
}

impl<'c> Loader<'c> {
    fn new(conn: &'c Connection, spec: &TpccSpec) -> Result<Loader<'c>, TpccError> {
        let card = spec.cardinalities();
        assert_eq!(
            card.customers_per_district, card.orders_per_district,
            "O_C_ID is a permutation of the customers"
        );
        let mut rng = Random::new(spec.seed, STREAM_LOAD);
        let nu = NuConstants::for_load(&mut rng);
        conn.execute_batch(&format!("BEGIN; {}", schema::CREATE))?;
        conn.execute(
            "INSERT INTO tpcc_load VALUES (?1, ?2, ?3, ?4)",
            params![spec.warehouses, spec.scale, spec.seed as i64, nu.c_last],
        )?;
        conn.execute_batch("COMMIT")?;
        Ok(Loader {
            conn,
            card,
            warehouses: spec.warehouses,
            rng,
            nu,
            rows_in_tx: 0,
        })
    }

    fn all(&mut self) -> Result<(), TpccError> {
        self.conn.execute_batch("BEGIN")?;
        self.items()?;
        for w in 1..=self.warehouses {
            self.warehouse(w)?;
            self.stock(w)?;
            for d in 1..=DISTRICTS {
                self.district(w, d)?;
                self.customers(w, d)?;
                self.orders(w, d)?;
            }
        }
        self.conn.execute_batch("COMMIT")?;
        Ok(())
    }

    /// Counts a row; commits every [`ROWS_PER_TX`].
    fn row(&mut self) -> Result<(), TpccError> {
        self.rows_in_tx += 1;
        if self.rows_in_tx == ROWS_PER_TX {
            self.conn.execute_batch("COMMIT; BEGIN")?;
            self.rows_in_tx = 0;
        }
        Ok(())
    }

    fn items(&mut self) -> Result<(), TpccError> {
        let n = self.card.items as usize;
        let original = self.rng.choose(n, n / 10);
        for i_id in 1..=self.card.items {
            let r = &mut self.rng;
            let (im_id, name, price) = (r.uniform(1, 10_000), r.a_string(14, 24), r.uniform(100, 10_000));
            let data = r.data(original[i_id as usize - 1]);
            self.conn
                .prepare_cached("INSERT INTO item VALUES (?1, ?2, ?3, ?4, ?5)")?
                .execute(params![i_id, im_id, name, price, data])?;
            self.row()?;
        }
        Ok(())
    }

    /// Name, two streets, city, state, zip (warehouses and districts).
    fn address(&mut self) -> [String; 6] {
        let r = &mut self.rng;
        [
            r.a_string(6, 10),
            r.a_string(10, 20),
            r.a_string(10, 20),
            r.a_string(10, 20),
            r.a_string(2, 2),
            r.zip(),
        ]
    }

    /// A tax rate in [0.0000..0.2000].
    fn tax(&mut self) -> f64 {
        self.rng.uniform(0, 2_000) as f64 / 10_000.0
    }

    fn warehouse(&mut self, w: u32) -> Result<(), TpccError> {
        let [name, s1, s2, city, state, zip] = self.address();
        let tax = self.tax();
        self.conn
            .prepare_cached("INSERT INTO warehouse VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")?
            .execute(params![w, name, s1, s2, city, state, zip, tax, 30_000_000i64])?;
        self.row()
    }

    fn stock(&mut self, w: u32) -> Result<(), TpccError> {
        let n = self.card.items as usize;
        let original = self.rng.choose(n, n / 10);
        for i_id in 1..=self.card.items {
            let r = &mut self.rng;
            let quantity = r.uniform(10, 100);
            let dist: Vec<String> = (0..10).map(|_| r.a_string(24, 24)).collect();
            let data = r.data(original[i_id as usize - 1]);
            self.conn
                .prepare_cached("INSERT INTO stock VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, 0, 0, 0, ?14)")?
                .execute(params![
                    i_id, w, quantity, dist[0], dist[1], dist[2], dist[3], dist[4], dist[5], dist[6], dist[7], dist[8], dist[9], data
                ])?;
            self.row()?;
        }
        Ok(())
    }

    fn district(&mut self, w: u32, d: u32) -> Result<(), TpccError> {
        let [name, s1, s2, city, state, zip] = self.address();
        let tax = self.tax();
        let next_o_id = self.card.orders_per_district + 1;
        self.conn
            .prepare_cached("INSERT INTO district VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)")?
            .execute(params![d, w, name, s1, s2, city, state, zip, tax, 3_000_000i64, next_o_id])?;
        self.row()
    }

    fn customers(&mut self, w: u32, d: u32) -> Result<(), TpccError> {
        let n = self.card.customers_per_district;
        let bad_credit = self.rng.choose(n as usize, n as usize / 10);
        for c_id in 1..=n {
            let r = &mut self.rng;
            let last = if c_id <= self.card.last_names {
                c_id - 1
            } else {
                r.nurand(A_C_LAST, 0, 999, self.nu.c_last) % self.card.last_names
            };
            let first = r.a_string(8, 16);
            let (s1, s2, city, state, zip) = (
                r.a_string(10, 20),
                r.a_string(10, 20),
                r.a_string(10, 20),
                r.a_string(2, 2),
                r.zip(),
            );
            let phone = r.n_string(16, 16);
            let credit = if bad_credit[c_id as usize - 1] { "BC" } else { "GC" };
            let discount = r.uniform(0, 5_000) as f64 / 10_000.0;
            let data = r.a_string(300, 500);
            self.conn
                .prepare_cached(
                    "INSERT INTO customer VALUES (?1, ?2, ?3, ?4, 'OE', ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, \
                     5000000, ?14, -1000, 1000, 1, 0, ?15)",
                )?
                .execute(params![
                    c_id,
                    d,
                    w,
                    first,
                    last_name(last),
                    s1,
                    s2,
                    city,
                    state,
                    zip,
                    phone,
                    LOAD_EPOCH,
                    credit,
                    discount,
                    data
                ])?;
            self.row()?;
            let h_data = self.rng.a_string(12, 24);
            self.conn
                .prepare_cached("INSERT INTO history VALUES (?1, ?2, ?3, ?2, ?3, ?4, 1000, ?5)")?
                .execute(params![c_id, d, w, LOAD_EPOCH, h_data])?;
            self.row()?;
        }
        Ok(())
    }

    fn orders(&mut self, w: u32, d: u32) -> Result<(), TpccError> {
        let n = self.card.orders_per_district;
        let first_undelivered = n - self.card.new_orders_per_district + 1;
        let customers = self.rng.permutation(self.card.customers_per_district);
        for o_id in 1..=n {
            let delivered = o_id < first_undelivered;
            let carrier = delivered.then(|| self.rng.uniform(1, 10));
            let ol_cnt = self.rng.uniform(5, 15);
            self.conn
                .prepare_cached("INSERT INTO orders VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1)")?
                .execute(params![o_id, d, w, customers[o_id as usize - 1], LOAD_EPOCH, carrier, ol_cnt])?;
            self.row()?;
            for number in 1..=ol_cnt {
                let r = &mut self.rng;
                let i_id = r.uniform(1, self.card.items);
                let amount = if delivered { 0 } else { r.uniform(1, 999_999) };
                let dist_info = r.a_string(24, 24);
                self.conn
                    .prepare_cached("INSERT INTO order_line VALUES (?1, ?2, ?3, ?4, ?5, ?3, ?6, 5, ?7, ?8)")?
                    .execute(params![
                        o_id,
                        d,
                        w,
                        number,
                        i_id,
                        delivered.then_some(LOAD_EPOCH),
                        amount,
                        dist_info
                    ])?;
                self.row()?;
            }
            if !delivered {
                self.conn
                    .prepare_cached("INSERT INTO new_order VALUES (?1, ?2, ?3)")?
                    .execute(params![o_id, d, w])?;
                self.row()?;
            }
        }
        Ok(())
    }
}
