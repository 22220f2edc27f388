//! SQLite's heavy statements (`txftl_sqlite::heavy`) on every SQLite mode
//! the registry lists, on the README's image (`jasmine`, 16 blocks per
//! plane; `flagcommit` of the same raw size for SLC-only protocols): each completes with the rows it must leave and
//! `integrity_check` ok. Sizes are scaled so every mode runs in a debug
//! build, yet each transaction outgrows what made it fail: Möbius's inode
//! (1,000 items of 8 KiB pages: the load's table is 4,000 pages), a
//! statement journal (the five CREATE INDEX), a sorter spill (ORDER BY
//! over a table above the 2 MB cache), a WAL commit of thousands of frames.
//! `txftl sql heavy` runs the full sizes (docs/host-and-sqlite.md).

use txftl_ftl::FtlConfig;
use txftl_nand::{DataMode, Nand, ViolationPolicy};
use txftl_protocols::PROTOCOLS;
use txftl_protocols::{format, ProtocolOptions};
use txftl_sqlite::heavy::{self, HeavySpec};
use txftl_sqlite::{Mode, Stack};

fn stack(mode: Mode) -> Stack {
    let p = heavy::device_preset(txftl_protocols::entry(mode.protocol()).unwrap().nand);
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let dev = format(mode.protocol(), nand, FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    Stack::format(dev, mode).unwrap()
}

fn check(mode: Mode, spec: &HeavySpec) -> Vec<String> {
    let t = std::time::Instant::now();
    let s = stack(mode);
    let out = heavy::run(&s, spec, |_| {}).unwrap_or_else(|e| panic!("{}: {e}", mode.cli()));
    eprintln!("{:<16} {:>6.1} s", mode.cli(), t.elapsed().as_secs_f64());
    use txftl_protocols::SqlJournal::{Memory, Off};
    if mode.protocol() == "mobius" && matches!(mode.journal(), Off | Memory) {
        // Transactions larger than one inode ran (what failed before; the
        // other journal modes send SQLite's large transactions through
        // their journal, not as one device transaction).
        let parts = s.with_fs_mut(|fs| fs.device().stats().protocol.get("mobius_part_inodes")).unwrap();
        assert!(parts > 0, "{}: no transaction outgrew an inode", mode.cli());
    }
    out.iter()
        .filter(|o| !o.ok())
        .map(|o| format!("{} {}: {o:?}", mode.cli(), o.statement.name()))
        .collect()
}

#[test]
fn every_mode_runs_the_heavy_statements() {
    let spec = HeavySpec {
        rows: 30_000,
        insert_rows: 20_000,
        ..HeavySpec::default()
    };
    let only = std::env::var("TXFTL_HEAVY_MODES").ok();
    let modes: Vec<Mode> = Mode::all(PROTOCOLS)
        .filter(|m| only.as_deref().is_none_or(|o| o.split(',').any(|x| x == m.cli())))
        .collect();
    // Each mode on its own stack, the modes shared out over the cores (one
    // at a time they left a core idle for most of this binary's time).
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(modes.len());
    let mut failures: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut found = Vec::new();
                    while let Some(&m) = modes.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                        found.extend(check(m, &spec));
                    }
                    found
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a mode's check panicked"))
            .collect()
    });
    failures.sort();
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Möbius with every durability point of the file system as one device
/// transaction (`FsyncPolicy::OneTransaction`, what its paper ran Filebench
/// on): a rollback journal's fsyncs of more pages than one inode lists go as
/// one transaction of several inodes, not the ordered way (before, more than
/// an inode's items fell back to it, counted in `one_tx_fallbacks`).
#[test]
fn mobius_fsyncs_larger_than_an_inode_are_one_transaction() {
    let mode = Mode::parse(PROTOCOLS, "mobius-rbj").unwrap();
    let s = stack(mode);
    s.with_fs_mut(|fs| fs.set_fsync_policy(txftl_fs::FsyncPolicy::OneTransaction))
        .unwrap()
        .unwrap();
    let spec = HeavySpec {
        rows: 30_000,
        insert_rows: 20_000,
        ..HeavySpec::default()
    };
    let out = heavy::run(&s, &spec, |_| {}).unwrap();
    let bad: Vec<_> = out.iter().filter(|o| !o.ok()).collect();
    assert!(bad.is_empty(), "{bad:#?}");
    let (fallbacks, parts) = s
        .with_fs_mut(|fs| (fs.stats().one_tx_fallbacks, fs.device().stats().protocol.get("mobius_part_inodes")))
        .unwrap();
    assert_eq!(fallbacks, 0);
    assert!(parts > 0, "no fsync outgrew an inode");
}
