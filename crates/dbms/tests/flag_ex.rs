//! Flag Commit's extended manager (sec. 4: CFC_ex, AFC_ex) under power cuts
//! (the shared test: `common/records.rs`): pending records of several
//! transactions on one page, commits with and without a commit record, cuts
//! between a commit's log force and its flags (the restart commits the
//! transaction the device left in doubt), cuts during the restart's redo.
//!
//! One point replays with
//! `TXFTL_FLAG_EX_CRASH=<op>:<torn>[:<restart op>:<torn>] cargo test -p txftl-dbms --test flag_ex`
//! (`TXFTL_FLAG_EX_PROTOCOL=afc-ex` for AFC_ex; cfc-ex otherwise).

mod common;

use common::records::Case;
use txftl_dbms::Recovery;

fn case(protocol: &'static str) -> Case {
    Case {
        protocol,
        recovery: Recovery::FlagEx,
        replay_env: "TXFTL_FLAG_EX_CRASH",
        test: "flag_ex",
    }
}

fn replayed() -> bool {
    let Ok(p) = std::env::var("TXFTL_FLAG_EX_PROTOCOL").or_else(|_| std::env::var("TXFTL_FLAG_EX_CRASH").map(|_| "cfc-ex".into())) else {
        return false;
    };
    let p: &'static str = if p == "afc-ex" { "afc-ex" } else { "cfc-ex" };
    case(p).replay()
}

fn every_cut(protocol: &'static str) {
    if replayed() {
        return;
    }
    let c = case(protocol);
    let (report, ops) = c.dry_run();
    let log = report.log.expect("a logging run reports its log");
    let d = &report.device.protocol;
    // What makes the extended protocols special must happen before the cuts.
    eprintln!(
        "  {} versions with pending records, {} of them several transactions'",
        d.get("fcx_record_writes"),
        d.get("fcx_shared_writes")
    );
    assert!(
        d.get("fcx_shared_writes") > 0,
        "no page version held two transactions' pending records"
    );
    assert!(log.commit_records > 0, "no commit needed a commit record");
    assert!(log.checkpoints >= 2, "no second checkpoint");
    let t = c.every_cut(&ops);
    assert!(t.redone > 0, "the cuts never made a restart redo");
    assert!(t.in_doubt_committed > 0, "no cut fell between a commit record and its flags");
}

#[test]
fn cfc_ex_every_cut_keeps_exactly_the_committed_records() {
    every_cut("cfc-ex");
}

#[test]
fn afc_ex_every_cut_keeps_exactly_the_committed_records() {
    every_cut("afc-ex");
}

/// The canary: a commit forces no commit record although some of its
/// updates are only in the buffer pool (Algorithm 2's test skipped). Some
/// cut after its acknowledgement loses them.
#[test]
fn the_cuts_catch_the_canary() {
    if std::env::var("TXFTL_FLAG_EX_CRASH").is_ok() {
        return;
    }
    case("cfc-ex").catches(Recovery::FlagExCanary);
}
