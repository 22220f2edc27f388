//! TPC-C on real SQLite: on the device in every mode, and in memory for the
//! statistics of the inputs and the canaries.

mod common;
use common::{count, small_tpcc as small, stack};
use txftl_protocols::PROTOCOLS;

use rusqlite::Connection;
use txftl_ftl::FtlConfig;
use txftl_nand::{DataMode, Nand, ViolationPolicy};
use txftl_protocols::{format, ProtocolOptions};
use txftl_sqlite::tpcc::{self, check, fingerprint, Canary, Outcome, TpccError, TpccReport, TpccSpec, TxEvent, TxKind, STANDARD_MIX};
use txftl_sqlite::workload::integrity_check;
use txftl_sqlite::{Mode, Stack};

fn loaded_in_memory(spec: &TpccSpec) -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    tpcc::load(&conn, spec).unwrap();
    conn
}

#[test]
fn the_load_has_the_spec_cardinalities_divided_by_the_scale() {
    let spec = TpccSpec {
        warehouses: 2,
        ..small(0, 3)
    };
    let conn = loaded_in_memory(&spec);
    check(&conn).unwrap();
    let c = spec.cardinalities();
    assert_eq!((c.items, c.customers_per_district, c.new_orders_per_district), (1000, 30, 9));
    assert_eq!(count(&conn, "SELECT count(*) FROM item"), 1000);
    assert_eq!(count(&conn, "SELECT count(*) FROM warehouse"), 2);
    assert_eq!(count(&conn, "SELECT count(*) FROM stock"), 2 * 1000);
    assert_eq!(count(&conn, "SELECT count(*) FROM district"), 2 * 10);
    assert_eq!(count(&conn, "SELECT count(*) FROM customer"), 2 * 10 * 30);
    assert_eq!(count(&conn, "SELECT count(*) FROM history"), 2 * 10 * 30);
    assert_eq!(count(&conn, "SELECT count(*) FROM orders"), 2 * 10 * 30);
    assert_eq!(count(&conn, "SELECT count(*) FROM new_order"), 2 * 10 * 9);
    let lines = count(&conn, "SELECT count(*) FROM order_line");
    assert!((2 * 10 * 30 * 5..=2 * 10 * 30 * 15).contains(&lines), "{lines}");
    assert_eq!(count(&conn, "SELECT min(o_ol_cnt) >= 5 AND max(o_ol_cnt) <= 15 FROM orders"), 1);
    // 10% exactly: ORIGINAL in I_DATA and S_DATA, bad credit.
    assert_eq!(count(&conn, "SELECT count(*) FROM item WHERE i_data LIKE '%ORIGINAL%'"), 100);
    assert_eq!(count(&conn, "SELECT count(*) FROM stock WHERE s_data LIKE '%ORIGINAL%'"), 2 * 100);
    assert_eq!(count(&conn, "SELECT count(*) FROM customer WHERE c_credit = 'BC'"), 2 * 10 * 3);
    // Every customer has exactly one order (O_C_ID is a permutation).
    assert_eq!(
        count(
            &conn,
            "SELECT count(DISTINCT o_w_id * 100000 + o_d_id * 10000 + o_c_id) FROM orders"
        ),
        2 * 10 * 30
    );
    // Undelivered: no carrier, no delivery date, an amount; delivered: the opposite.
    assert_eq!(count(&conn, "SELECT count(*) FROM orders WHERE o_carrier_id IS NULL"), 2 * 10 * 9);
    assert_eq!(
        count(
            &conn,
            "SELECT count(*) FROM order_line WHERE (ol_delivery_d IS NULL) != (ol_amount > 0)"
        ),
        0
    );
    // The first customers' last names are the numbers in order; the rest
    // are among the scaled names.
    let first: String = conn
        .query_row(
            "SELECT c_last FROM customer WHERE c_w_id = 1 AND c_d_id = 1 AND c_id = 4",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(first, "BARBARPRI");
    assert_eq!(count(&conn, "SELECT count(DISTINCT c_last) FROM customer"), 10);
    assert_eq!(count(&conn, "SELECT sum(w_ytd) FROM warehouse"), 2 * 30_000_000);
    assert_eq!(
        count(&conn, "SELECT min(d_next_o_id) = 31 AND max(d_next_o_id) = 31 FROM district"),
        1
    );
}

/// Load and the standard mix on each mode's device: consistent, intact, the
/// mix's counts, and the very same database on every mode.
#[test]
fn every_mode_runs_the_standard_mix_to_the_same_database() {
    let spec = small(300, 11);
    let mut first: Option<(u64, TpccReport)> = None;
    for mode in Mode::all(PROTOCOLS) {
        let s = stack(mode);
        let conn = s.open("tpcc.db", 4096).unwrap();
        tpcc::load(&conn, &spec).unwrap();
        check(&conn).unwrap_or_else(|e| panic!("{mode:?} after load: {e}"));
        let report = tpcc::run(&conn, &spec).unwrap();
        check(&conn).unwrap_or_else(|e| panic!("{mode:?} after the run: {e}"));
        assert_eq!(integrity_check(&conn).unwrap(), "ok", "{mode:?}");
        // The deck holds the mix exactly in every 100 transactions.
        for kind in TxKind::ALL {
            assert_eq!(report.kind(kind).count, 3 * STANDARD_MIX[kind.index()] as u64, "{mode:?} {kind:?}");
            let k = report.kind(kind);
            assert_eq!(k.committed + k.rolled_back, k.count);
            if kind != TxKind::NewOrder {
                assert_eq!(k.rolled_back, 0, "{kind:?}");
            }
        }
        assert_eq!(report.new_orders, report.new_order.committed);
        let fp = fingerprint(&conn).unwrap();
        match &first {
            None => first = Some((fp, report)),
            Some((fp0, r0)) => {
                assert_eq!(
                    fp,
                    *fp0,
                    "{mode:?}: another database than {:?}'s",
                    Mode::all(PROTOCOLS).next().unwrap()
                );
                assert_eq!(&report, r0, "{mode:?}");
            }
        }
        // The committed orders are in the database.
        let orders = count(&conn, "SELECT count(*) FROM orders") as u64;
        assert_eq!(orders, 10 * 30 + first.as_ref().unwrap().1.new_orders, "{mode:?}");
        drop(conn);
        s.into_fs().unwrap();
    }
}

/// The hook brackets each transaction, so counters can be split by type.
#[test]
fn the_hook_attributes_page_writes_to_transaction_types() {
    let spec = small(200, 5);
    let s = stack(Mode::parse(PROTOCOLS, "xftl").unwrap());
    let conn = s.open("tpcc.db", 4096).unwrap();
    tpcc::load(&conn, &spec).unwrap();
    let pages = || s.with_fs_mut(|fs| fs.stats().database_page_writes).unwrap();
    let commits = || s.with_fs_mut(|fs| fs.stats().tx_commits).unwrap();
    let (pages_before, commits_before) = (pages(), commits());
    let mut written = [0u64; 5];
    let mut committed = [0u64; 5];
    let mut at = (0, 0);
    let mut begun = None;
    let mut events = 0;
    let report = tpcc::run_with(&conn, &spec, |e| {
        events += 1;
        match *e {
            TxEvent::Begin { index, kind } => {
                assert_eq!(begun, None, "Begin without End");
                begun = Some((index, kind));
                at = (pages(), commits());
            }
            TxEvent::End { index, kind, outcome } => {
                assert_eq!(begun.take(), Some((index, kind)));
                written[kind.index()] += pages() - at.0;
                committed[kind.index()] += commits() - at.1;
                if outcome == Outcome::RolledBack {
                    assert_eq!(commits(), at.1, "a rolled-back New-Order commits nothing on the device");
                }
            }
        }
    })
    .unwrap();
    assert_eq!(events, 2 * spec.transactions);
    assert_eq!(
        written.iter().sum::<u64>(),
        pages() - pages_before,
        "every page written is attributed"
    );
    assert_eq!(committed.iter().sum::<u64>(), commits() - commits_before);
    for kind in TxKind::ALL {
        if kind.read_only() {
            assert_eq!(written[kind.index()], 0, "{kind:?} only reads");
            assert_eq!(committed[kind.index()], 0, "{kind:?} only reads");
        } else {
            assert!(written[kind.index()] > 0, "{kind:?}");
            // One device transaction per committed database transaction.
            assert_eq!(committed[kind.index()], report.kind(kind).committed, "{kind:?}");
        }
    }
    check(&conn).unwrap();
}

/// The inputs follow clause 2: 1% New-Order rollbacks, 1% remote order lines
/// and 15% remote payments with two warehouses, 60% by last name.
#[test]
fn rollbacks_remote_accesses_and_lookups_by_name_follow_the_spec() {
    let spec = TpccSpec {
        warehouses: 2,
        ..small(4000, 21)
    };
    let conn = loaded_in_memory(&spec);
    let r = tpcc::run(&conn, &spec).unwrap();
    check(&conn).unwrap();
    let pct = |part: u64, whole: u64| 100.0 * part as f64 / whole as f64;
    assert_eq!(r.new_order.count, 1800);
    let rollback = pct(r.new_order.rolled_back, r.new_order.count);
    assert!((0.4..=1.8).contains(&rollback), "New-Order rollbacks {rollback:.2}%: {r:?}");
    let remote_lines = pct(r.order_lines_remote, r.order_lines);
    assert!((0.7..=1.3).contains(&remote_lines), "remote order lines {remote_lines:.2}%");
    let by_name = pct(r.payments_by_last_name, r.payment.count);
    assert!((56.0..=64.0).contains(&by_name), "payments by name {by_name:.1}%");
    let remote = pct(r.payments_remote, r.payment.count);
    assert!((12.0..=18.0).contains(&remote), "remote payments {remote:.1}%");
    let os_by_name = pct(r.order_status_by_last_name, r.order_status.count);
    assert!((50.0..=70.0).contains(&os_by_name), "order-status by name {os_by_name:.1}%");
    // What the report says reached the database.
    assert_eq!(count(&conn, "SELECT count(*) FROM orders") as u64, 2 * 10 * 30 + r.new_orders);
    assert_eq!(
        count(&conn, "SELECT count(*) FROM order_line WHERE ol_supply_w_id != ol_w_id") as u64,
        r.order_lines_remote
    );
    assert_eq!(
        count(&conn, "SELECT count(*) FROM orders WHERE o_all_local = 0") > 0,
        r.order_lines_remote > 0
    );
    assert_eq!(
        count(&conn, "SELECT count(*) FROM history WHERE h_c_w_id != h_w_id") as u64,
        r.payments_remote
    );
    assert_eq!(
        count(&conn, "SELECT count(*) FROM history") as u64,
        2 * 10 * 30 + r.payment.committed
    );
    assert_eq!(count(&conn, "SELECT sum(s_remote_cnt) FROM stock") as u64, r.order_lines_remote);
    // Bad-credit customers who paid carry the payment at the left of C_DATA.
    let paid_bc = count(
        &conn,
        "SELECT count(*) FROM customer WHERE c_credit = 'BC' AND c_payment_cnt > 1 \
         AND c_data GLOB (c_id || ' * ' || '*')",
    );
    assert!(paid_bc > 0);
    assert_eq!(count(&conn, "SELECT max(length(c_data)) <= 500 FROM customer"), 1);
}

/// Each canary breaks one consistency condition, and `check` says which (and no other).
/// 100 transactions: 4 Deliveries leave undelivered orders in every district
/// (condition 2 does not apply to a district without any, clause 3.3.2.2).
#[test]
fn check_catches_each_broken_transaction() {
    for (canary, condition) in [
        (Canary::PaymentSkipsWarehouseYtd, "condition 1"),
        (Canary::NewOrderSkipsNewOrderRow, "condition 2"),
        (Canary::DeliveryLeavesAGap, "condition 3"),
        (Canary::NewOrderOneLineShort, "condition 4"),
    ] {
        let spec = TpccSpec { canary, ..small(100, 4) };
        let conn = loaded_in_memory(&spec);
        check(&conn).unwrap();
        tpcc::run(&conn, &spec).unwrap();
        let err = check(&conn).expect_err(&format!("{canary:?} must fail the check"));
        assert!(err.contains(condition), "{canary:?}: {err}");
        for other in ["condition 1", "condition 2", "condition 3", "condition 4"] {
            assert!(
                other == condition || !err.contains(other),
                "{canary:?} breaks only {condition}: {err}"
            );
        }
    }
}

#[test]
fn same_seed_same_database_another_seed_another() {
    let run = |seed| {
        let spec = small(300, seed);
        let conn = loaded_in_memory(&spec);
        let report = tpcc::run(&conn, &spec).unwrap();
        let sums = count(
            &conn,
            "SELECT (SELECT sum(c_balance) FROM customer) + (SELECT sum(s_quantity) FROM stock) \
             + (SELECT sum(ol_amount) FROM order_line)",
        );
        (fingerprint(&conn).unwrap(), report, sums)
    };
    let a = run(9);
    assert_eq!(a, run(9));
    let b = run(10);
    assert_ne!(a.0, b.0);
    assert_ne!(a.2, b.2);
}

#[test]
fn bad_specs_and_databases_are_refused() {
    let conn = Connection::open_in_memory().unwrap();
    let spec = small(10, 1);
    assert!(matches!(tpcc::run(&conn, &spec), Err(TpccError::Data(m)) if m.contains("load first")));
    let bad_mix = TpccSpec {
        mix: [45, 43, 4, 4, 5],
        ..spec.clone()
    };
    assert!(matches!(tpcc::load(&conn, &bad_mix), Err(TpccError::Spec(m)) if m.contains("sums to 101")));
    for bad in [
        TpccSpec {
            warehouses: 0,
            ..spec.clone()
        },
        TpccSpec { scale: 0, ..spec.clone() },
        TpccSpec {
            scale: 901,
            ..spec.clone()
        },
    ] {
        assert!(matches!(bad.validate(), Err(TpccError::Spec(_))), "{bad:?}");
    }
    tpcc::load(&conn, &spec).unwrap();
    // Loading twice is refused by SQLite (the tables exist).
    assert!(matches!(tpcc::load(&conn, &spec), Err(TpccError::Sql(_))));
    let other = TpccSpec {
        warehouses: 2,
        ..spec.clone()
    };
    assert!(matches!(tpcc::run(&conn, &other), Err(TpccError::Spec(m)) if m.contains("1 warehouses")));
    // A mix of one type only.
    let only_payments = TpccSpec {
        mix: [0, 100, 0, 0, 0],
        ..spec
    };
    let r = tpcc::run(&conn, &only_payments).unwrap();
    assert_eq!(r.payment.count, 10);
    assert_eq!(r.transactions(), 10);
    check(&conn).unwrap();
}

/// Loads the spec's full cardinalities for one warehouse (100,000 items and
/// stock rows, 30,000 customers and orders), runs 20,000 transactions of the
/// standard mix, checks, and prints wall timings.
fn full_scale(conn: &Connection, label: &str) {
    use std::time::Instant;
    let spec = TpccSpec {
        transactions: 20_000,
        ..TpccSpec::default()
    };
    let t = Instant::now();
    tpcc::load(conn, &spec).unwrap();
    let load_s = t.elapsed().as_secs_f64();
    let pages = count(conn, "PRAGMA page_count");
    let page_size = count(conn, "PRAGMA page_size");
    eprintln!(
        "{label}: load {load_s:.1} s wall, {pages} pages of {page_size} B = {:.1} MiB",
        (pages * page_size) as f64 / (1 << 20) as f64
    );
    for (table, _) in tpcc::schema::TABLES {
        eprintln!("  {table}: {} rows", count(conn, &format!("SELECT count(*) FROM {table}")));
    }
    check(conn).unwrap();
    let t = Instant::now();
    let r = tpcc::run(conn, &spec).unwrap();
    let run_s = t.elapsed().as_secs_f64();
    eprintln!(
        "{label}: {} transactions in {run_s:.1} s wall = {:.0} per wall second\n  {r:?}",
        r.transactions(),
        r.transactions() as f64 / run_s
    );
    check(conn).unwrap();
    assert_eq!(integrity_check(conn).unwrap(), "ok");
    assert_eq!(r.new_order.count, 9_000);
    let rollback = 100.0 * r.new_order.rolled_back as f64 / r.new_order.count as f64;
    assert!((0.7..=1.3).contains(&rollback), "{rollback:.2}%");
}

/// Full scale in an in-memory SQLite (the generator and the transactions
/// alone). By hand, in release:
/// `cargo test --release -p txftl-sqlite --test tpcc -- --ignored --nocapture full_scale`
#[test]
#[ignore = "full scale: about 80 MB; run by hand in release"]
fn full_scale_in_memory() {
    let conn = Connection::open_in_memory().unwrap();
    conn.pragma_update(None, "page_size", 4096).unwrap();
    full_scale(&conn, "in memory");
}

/// Full scale on a 512 MiB device (the Jasmine geometry with 4 KiB pages and
/// 128 blocks per plane), in every mode.
#[test]
#[ignore = "full scale: 512 MiB devices; run by hand in release"]
fn full_scale_on_the_device() {
    for mode in Mode::all(PROTOCOLS) {
        // `flagcommit` of the same raw size for a protocol that needs SLC cells.
        let mut p = txftl_sqlite::heavy::device_preset(mode.entry().nand);
        p.geometry.blocks_per_plane *= 8;
        if p.name == "jasmine" {
            p.geometry.page_size = 4096;
        }
        let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
        let dev = format(mode.protocol(), nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
        let s = Stack::format(dev, mode).unwrap();
        let conn = s.open("tpcc.db", 4096).unwrap();
        full_scale(&conn, mode.name());
        let st = s.with_fs_mut(|fs| fs.stats()).unwrap();
        eprintln!("  {st:?}");
        drop(conn);
        s.into_fs().unwrap();
    }
}
