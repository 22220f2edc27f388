//! Real SQLite on the device, in every journal mode.

use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::{format, ProtocolOptions};
use txftl_sqlite::workload::{costs, integrity_check, load, run_tx, TxWorkload};
use txftl_sqlite::{Mode, Stack};

fn stack(mode: Mode) -> Stack {
    let mut p = preset("tiny").unwrap();
    p.geometry.blocks_per_plane = 512;
    p.geometry.page_size = 4096;
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let dev = format(mode.protocol(), nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    Stack::format(dev, mode).unwrap()
}

#[test]
fn every_mode_runs_the_workload_and_keeps_integrity() {
    for mode in Mode::ALL {
        let s = stack(mode);
        let conn = s.open("test.db", 4096).unwrap();
        load(&conn, 2000, 1).unwrap();
        let w = TxWorkload {
            rows: 2000,
            k: 5,
            transactions: 50,
            seed: 2,
        };
        let mut expect = costs(&conn).unwrap();
        for i in 0..w.transactions {
            let u = w.updates(i);
            run_tx(&conn, &u).unwrap();
            for (id, c) in u {
                expect[id as usize] = c;
            }
        }
        assert_eq!(integrity_check(&conn).unwrap(), "ok", "{mode:?}");
        assert_eq!(costs(&conn).unwrap(), expect, "{mode:?}");
        let st = s.with_fs_mut(|fs| fs.stats()).unwrap();
        match mode {
            Mode::Rbj => assert!(st.journal_page_writes > 0, "{st:?}"),
            Mode::Wal => assert!(st.wal_page_writes > 0, "{st:?}"),
            Mode::XftlOff | Mode::XftlMemory => {
                assert_eq!(
                    st.journal_page_writes + st.wal_page_writes + st.metadata_journal_writes,
                    0,
                    "{mode:?} {st:?}"
                );
                assert!(st.tx_commits >= 50, "{st:?}");
            }
        }
        drop(conn);
        s.into_fs().unwrap();
    }
}

/// ROLLBACK on X-FTL after the page cache spilled uncommitted pages to the device.
#[test]
fn rollback_after_a_cache_spill_on_xftl() {
    for mode in [Mode::XftlOff, Mode::XftlMemory] {
        let s = stack(mode);
        let conn = s.open("test.db", 4096).unwrap();
        load(&conn, 2000, 1).unwrap();
        let before = costs(&conn).unwrap();
        conn.pragma_update(None, "cache_size", 10).unwrap(); // 10 pages: updates spill
        conn.execute_batch("BEGIN; UPDATE partsupp SET ps_supplycost = -1;").unwrap();
        let spilled = s.with_fs_mut(|fs| fs.stats().database_page_writes).unwrap();
        assert!(spilled > 0, "the cache must have spilled to the device");
        conn.execute_batch("ROLLBACK").unwrap();
        assert_eq!(costs(&conn).unwrap(), before, "{mode:?}");
        assert_eq!(integrity_check(&conn).unwrap(), "ok");
    }
}

#[test]
fn exclusive_locking_is_refused_on_xftl() {
    let s = stack(Mode::XftlOff);
    let conn = s.open("test.db", 4096).unwrap();
    let err = conn.execute_batch("PRAGMA locking_mode=EXCLUSIVE").unwrap_err();
    assert!(err.to_string().contains("locking_mode=EXCLUSIVE"), "{err}");
}
