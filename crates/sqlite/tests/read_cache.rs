//! The host's clean-page cache (`Fs::set_read_cache`) changes no byte SQLite
//! reads: TPC-C on each kind of mode (WAL on the plain FTL, WAL whose
//! checkpoints remap, the journal off on transactional devices, grouped or
//! not) ends in the same database with the cache as without it, while the
//! device serves fewer reads. The cache is small, so pages leave it and come
//! back.

mod common;
use common::{small_tpcc, stack};
use txftl_protocols::PROTOCOLS;
use txftl_sqlite::{tpcc, Mode, Synchronous};

/// TPC-C's database fingerprint and the device's page reads, with the
/// clean-page cache at `pages` (0: off).
fn run(mode: Mode, sync: Synchronous, pages: usize) -> (u64, u64, u64) {
    let mut s = stack(mode);
    s.synchronous = sync;
    s.with_fs_mut(|fs| fs.set_read_cache(pages)).unwrap().unwrap();
    let c = s.open("tpcc.db", 4096).unwrap();
    let spec = small_tpcc(150, 3);
    tpcc::load(&c, &spec).unwrap();
    tpcc::run(&c, &spec).unwrap();
    tpcc::check(&c).unwrap();
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    let fp = tpcc::fingerprint(&c).unwrap();
    drop(c);
    let st = s.with_fs_mut(|fs| fs.stats()).unwrap();
    (fp, st.page_reads, st.cached_reads)
}

#[test]
fn the_page_cache_changes_nothing_sqlite_reads() {
    for name in ["wal", "sw-wal", "nolgn", "xftl"] {
        let mode = Mode::parse(PROTOCOLS, name).unwrap();
        for sync in [Synchronous::Normal, Synchronous::Full] {
            let (fp_off, reads_off, cached_off) = run(mode, sync, 0);
            let (fp_on, reads_on, cached_on) = run(mode, sync, 64);
            assert_eq!(fp_on, fp_off, "{name} {sync:?}: the database differs with the cache");
            assert_eq!(cached_off, 0);
            assert!(
                cached_on > 0 && reads_on < reads_off,
                "{name} {sync:?}: {reads_on} device reads with it, {reads_off} without"
            );
        }
    }
}
