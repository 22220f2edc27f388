//! The nine tables of clause 1.3, with the spec's columns and primary keys,
//! and the two secondary indexes the transactions need.
//!
//! Representation (SQLite has neither fixed-point numbers nor a date type):
//! - money (`numeric(n,2)`: W_YTD, D_YTD, C_CREDIT_LIM, C_BALANCE,
//!   C_YTD_PAYMENT, H_AMOUNT, I_PRICE, OL_AMOUNT) is an INTEGER of cents, so
//!   the consistency sums are exact;
//! - rates (`numeric(4,4)`: W_TAX, D_TAX, C_DISCOUNT) are REAL, multiples of 0.0001;
//! - dates and times (C_SINCE, H_DATE, O_ENTRY_D, OL_DELIVERY_D) are INTEGER
//!   seconds since the Unix epoch, from the workload's own clock (see `mod.rs`);
//! - text columns are TEXT of the spec's lengths.
//!
//! The tables with a composite primary key are `WITHOUT ROWID`: the rows are
//! stored in primary-key order in the key's own B-tree (clustered, as most
//! TPC-C implementations lay them out), not in a rowid table plus an index.
//! ITEM and WAREHOUSE have a single integer key (the rowid); HISTORY has no
//! key (clause 1.3: its rows need no unique identification).

/// The nine tables in the order the load fills them, with their primary-key
/// columns (`ORDER BY` for a deterministic scan; HISTORY scans by rowid).
pub const TABLES: [(&str, &str); 9] = [
    ("item", "i_id"),
    ("warehouse", "w_id"),
    ("stock", "s_w_id, s_i_id"),
    ("district", "d_w_id, d_id"),
    ("customer", "c_w_id, c_d_id, c_id"),
    ("history", "rowid"),
    ("orders", "o_w_id, o_d_id, o_id"),
    ("new_order", "no_w_id, no_d_id, no_o_id"),
    ("order_line", "ol_w_id, ol_d_id, ol_o_id, ol_number"),
];

pub const CREATE: &str = "
CREATE TABLE warehouse (
    w_id       INTEGER PRIMARY KEY,
    w_name     TEXT NOT NULL,
    w_street_1 TEXT NOT NULL,
    w_street_2 TEXT NOT NULL,
    w_city     TEXT NOT NULL,
    w_state    TEXT NOT NULL,
    w_zip      TEXT NOT NULL,
    w_tax      REAL NOT NULL,
    w_ytd      INTEGER NOT NULL
);
CREATE TABLE district (
    d_id        INTEGER NOT NULL,
    d_w_id      INTEGER NOT NULL,
    d_name      TEXT NOT NULL,
    d_street_1  TEXT NOT NULL,
    d_street_2  TEXT NOT NULL,
    d_city      TEXT NOT NULL,
    d_state     TEXT NOT NULL,
    d_zip       TEXT NOT NULL,
    d_tax       REAL NOT NULL,
    d_ytd       INTEGER NOT NULL,
    d_next_o_id INTEGER NOT NULL,
    PRIMARY KEY (d_w_id, d_id)
) WITHOUT ROWID;
CREATE TABLE customer (
    c_id           INTEGER NOT NULL,
    c_d_id         INTEGER NOT NULL,
    c_w_id         INTEGER NOT NULL,
    c_first        TEXT NOT NULL,
    c_middle       TEXT NOT NULL,
    c_last         TEXT NOT NULL,
    c_street_1     TEXT NOT NULL,
    c_street_2     TEXT NOT NULL,
    c_city         TEXT NOT NULL,
    c_state        TEXT NOT NULL,
    c_zip          TEXT NOT NULL,
    c_phone        TEXT NOT NULL,
    c_since        INTEGER NOT NULL,
    c_credit       TEXT NOT NULL,
    c_credit_lim   INTEGER NOT NULL,
    c_discount     REAL NOT NULL,
    c_balance      INTEGER NOT NULL,
    c_ytd_payment  INTEGER NOT NULL,
    c_payment_cnt  INTEGER NOT NULL,
    c_delivery_cnt INTEGER NOT NULL,
    c_data         TEXT NOT NULL,
    PRIMARY KEY (c_w_id, c_d_id, c_id)
) WITHOUT ROWID;
CREATE TABLE history (
    h_c_id   INTEGER NOT NULL,
    h_c_d_id INTEGER NOT NULL,
    h_c_w_id INTEGER NOT NULL,
    h_d_id   INTEGER NOT NULL,
    h_w_id   INTEGER NOT NULL,
    h_date   INTEGER NOT NULL,
    h_amount INTEGER NOT NULL,
    h_data   TEXT NOT NULL
);
CREATE TABLE new_order (
    no_o_id INTEGER NOT NULL,
    no_d_id INTEGER NOT NULL,
    no_w_id INTEGER NOT NULL,
    PRIMARY KEY (no_w_id, no_d_id, no_o_id)
) WITHOUT ROWID;
CREATE TABLE orders (
    o_id         INTEGER NOT NULL,
    o_d_id       INTEGER NOT NULL,
    o_w_id       INTEGER NOT NULL,
    o_c_id       INTEGER NOT NULL,
    o_entry_d    INTEGER NOT NULL,
    o_carrier_id INTEGER,
    o_ol_cnt     INTEGER NOT NULL,
    o_all_local  INTEGER NOT NULL,
    PRIMARY KEY (o_w_id, o_d_id, o_id)
) WITHOUT ROWID;
CREATE TABLE order_line (
    ol_o_id        INTEGER NOT NULL,
    ol_d_id        INTEGER NOT NULL,
    ol_w_id        INTEGER NOT NULL,
    ol_number      INTEGER NOT NULL,
    ol_i_id        INTEGER NOT NULL,
    ol_supply_w_id INTEGER NOT NULL,
    ol_delivery_d  INTEGER,
    ol_quantity    INTEGER NOT NULL,
    ol_amount      INTEGER NOT NULL,
    ol_dist_info   TEXT NOT NULL,
    PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)
) WITHOUT ROWID;
CREATE TABLE item (
    i_id    INTEGER PRIMARY KEY,
    i_im_id INTEGER NOT NULL,
    i_name  TEXT NOT NULL,
    i_price INTEGER NOT NULL,
    i_data  TEXT NOT NULL
);
CREATE TABLE stock (
    s_i_id       INTEGER NOT NULL,
    s_w_id       INTEGER NOT NULL,
    s_quantity   INTEGER NOT NULL,
    s_dist_01    TEXT NOT NULL,
    s_dist_02    TEXT NOT NULL,
    s_dist_03    TEXT NOT NULL,
    s_dist_04    TEXT NOT NULL,
    s_dist_05    TEXT NOT NULL,
    s_dist_06    TEXT NOT NULL,
    s_dist_07    TEXT NOT NULL,
    s_dist_08    TEXT NOT NULL,
    s_dist_09    TEXT NOT NULL,
    s_dist_10    TEXT NOT NULL,
    s_ytd        INTEGER NOT NULL,
    s_order_cnt  INTEGER NOT NULL,
    s_remote_cnt INTEGER NOT NULL,
    s_data       TEXT NOT NULL,
    PRIMARY KEY (s_w_id, s_i_id)
) WITHOUT ROWID;
-- Payment and Order-Status by last name (clauses 2.5.2.2, 2.6.2.2): the
-- customers of a district with a last name, sorted by first name.
CREATE INDEX customer_last_name ON customer (c_w_id, c_d_id, c_last, c_first);
-- Order-Status: a customer's most recent order (clause 2.6.2.2).
CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);
-- Not a TPC-C table: what the load was (the run checks it matches, and
-- takes the C_LAST constant of the load for the delta rule of clause 2.1.6.1).
CREATE TABLE tpcc_load (
    warehouses INTEGER NOT NULL,
    scale      INTEGER NOT NULL,
    seed       INTEGER NOT NULL,
    c_last     INTEGER NOT NULL
);
";
