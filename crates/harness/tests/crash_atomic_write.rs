//! Exhaustive crash tests of Atomic-Write on the tiny geometry, every flash
//! operation with every torn variant, for both write-backs: the default
//! (the L2P table pages a commit changed) and `map-log=1` (a mapping-log
//! page per commit). Recovery takes the newest version of each page written
//! back since the checkpoint, and redoes from the flags the one group whose
//! flag page may be on flash without its whole write-back, so the cuts
//! between a flag page and its write-back matter most. The sets: one
//! transaction at a time (its only isolation level) with aborts; long groups
//! across GC (which moves the open group's pages) and the checkpoints the
//! FTL takes for itself mid-group (so recovery must read the open group's
//! blocks); writes outside transactions inside open groups; commits whose
//! write-back is two table pages; two cuts; and the canary, which flags a
//! group's first page instead of its last.

mod common;
use txftl_harness::{CrashSpec, DeviceSpec, Expect, TxShape};
use txftl_protocols::ProtocolOptions;

/// The two write-backs, as `--protocol-opt` names them.
#[derive(Clone, Copy, Debug)]
enum WriteBack {
    Tables,
    MapLog,
}

impl WriteBack {
    fn pages_counter(self) -> &'static str {
        match self {
            WriteBack::Tables => "aw_table_pages",
            WriteBack::MapLog => "aw_map_log_pages",
        }
    }
}

/// `tiny` with `blocks_per_plane` blocks a plane (None: tiny's 16).
fn device(protocol: &str, wb: WriteBack, blocks_per_plane: Option<u32>) -> (DeviceSpec, String) {
    let mut d = DeviceSpec::tiny(protocol);
    let mut flags = String::new();
    if let WriteBack::MapLog = wb {
        d.opts = ProtocolOptions::new().with("map-log", 1);
        flags += " --protocol-opt map-log=1";
    }
    if let Some(n) = blocks_per_plane {
        d.nand.geometry.blocks_per_plane = n;
        flags += &format!(" --blocks-per-plane {n}");
    }
    (d, flags)
}

fn spec(protocol: &str, wb: WriteBack, ops: u64, tx: TxShape, recovery_cuts: bool) -> CrashSpec {
    let expect = vec![
        Expect::Device("commits"),
        Expect::Device("gc_runs"),
        Expect::TornDataIntactOob,
        Expect::Protocol(wb.pages_counter()),
    ];
    let (d, flags) = device(protocol, wb, None);
    common::txwrite_spec(d, &flags, ops, 90, tx, recovery_cuts, expect)
}

fn shape(pages_per_tx: u32, abort_pct: u32, nontx_pct: u32) -> TxShape {
    TxShape {
        pages_per_tx,
        abort_pct,
        concurrency: 1,
        nontx_pct,
        trim_pct: 5,
        transactions: 0,
        cross_pct: 0,
        exclusive: false,
        end_flag: false,
        static_dynamic: None,
    }
}

fn one_group_at_a_time_with_aborts(wb: WriteBack) {
    let mut s = spec("atomic-write", wb, 300, shape(5, 30, 10), true);
    s.expect.extend([Expect::Device("aborts"), Expect::Protocol("aw_abort_pages")]);
    let r = common::run_clean(&s);
    // Every commit writes its mappings back.
    assert!(r.dry_run.protocol_meta_writes >= r.dry_run.commits, "{:?}", r.dry_run);
    eprintln!("{wb:?}: {} crash points, {} recovery cuts", r.crash_points, r.recovery_crash_points);
}

#[test]
fn one_group_at_a_time_with_aborts_tables() {
    one_group_at_a_time_with_aborts(WriteBack::Tables);
}

#[test]
fn one_group_at_a_time_with_aborts_map_log() {
    one_group_at_a_time_with_aborts(WriteBack::MapLog);
}

/// Groups of 20 pages: GC moves the open group's pages, and the FTL's own
/// checkpoints fall inside groups, so a cut between a flag page and its
/// write-back needs the open group's blocks read.
fn long_groups_across_gc_and_checkpoints(wb: WriteBack) {
    let mut s = spec("atomic-write", wb, 250, shape(20, 10, 10), false);
    s.expect.extend([Expect::ZoneScans, Expect::Device("gc_protocol_copies")]);
    let r = common::run_clean(&s);
    eprintln!("{wb:?}: {} crash points", r.crash_points);
}

#[test]
fn long_groups_across_gc_and_checkpoints_tables() {
    long_groups_across_gc_and_checkpoints(WriteBack::Tables);
}

#[test]
fn long_groups_across_gc_and_checkpoints_map_log() {
    long_groups_across_gc_and_checkpoints(WriteBack::MapLog);
}

/// Writes outside transactions, 30% of them, many while a group is open:
/// pages of no group between a group's pages.
fn plain_writes_inside_open_groups(wb: WriteBack) {
    let r = common::run_clean(&common::sampled(spec("atomic-write", wb, 300, shape(8, 10, 30), false), 1));
    assert_eq!(r.second_crash_points, r.crash_points, "one second cut per crash point");
    eprintln!("{wb:?}: {} crash points, {} second cuts", r.crash_points, r.second_crash_points);
}

#[test]
fn plain_writes_inside_open_groups_tables() {
    plain_writes_inside_open_groups(WriteBack::Tables);
}

#[test]
fn plain_writes_inside_open_groups_map_log() {
    plain_writes_inside_open_groups(WriteBack::MapLog);
}

/// Twice tiny's blocks: more logical pages than a 512-byte table page maps
/// (128), so a commit writes back one or two table pages, and cuts fall
/// between them as well as between the flag page and the first.
#[test]
fn two_table_pages_per_commit() {
    let (d, flags) = device("atomic-write", WriteBack::Tables, Some(32));
    let expect = vec![
        Expect::Device("commits"),
        Expect::Device("aborts"),
        Expect::Device("gc_runs"),
        Expect::Protocol("aw_table_pages"),
    ];
    let s = common::txwrite_spec(d, &flags, 250, 90, shape(6, 20, 10), true, expect);
    let r = common::run_clean(&s);
    let pages = r.dry_run.protocol.get("aw_table_pages");
    assert!(
        pages > r.dry_run.commits + r.dry_run.commits / 4,
        "{pages} table pages, {} commits",
        r.dry_run.commits
    );
    eprintln!("{} crash points, {} recovery cuts", r.crash_points, r.recovery_crash_points);
}

/// Two cuts: recover, go on, cut again, at every operation of the
/// continuation: what a mount rebuilds (the next commit number, the
/// boundary after a group a cut left open) is tested only so.
fn every_second_cut_after_recovery(wb: WriteBack) {
    let expect = vec![Expect::Device("commits"), Expect::Device("aborts"), Expect::TornDataIntactOob];
    let (d, flags) = device("atomic-write", wb, None);
    let s = common::txwrite_spec(d, &flags, 60, 30, shape(4, 30, 10), false, expect);
    let r = common::run_every_second_cut(s);
    eprintln!("{wb:?}: {} crash points, {} second cuts", r.crash_points, r.second_crash_points);
}

#[test]
fn every_second_cut_after_recovery_tables() {
    every_second_cut_after_recovery(WriteBack::Tables);
}

#[test]
fn every_second_cut_after_recovery_map_log() {
    every_second_cut_after_recovery(WriteBack::MapLog);
}

#[test]
fn canary_is_caught_tables() {
    // 20% aborts: at 10% one seed of eight aborts no group.
    common::assert_caught_at_every_seed(&spec("atomic-w-canary", WriteBack::Tables, 250, shape(5, 20, 10), false));
}

#[test]
fn canary_is_caught_map_log() {
    common::assert_caught_at_every_seed(&spec("atomic-w-canary", WriteBack::MapLog, 250, shape(5, 20, 10), false));
}
