//! Power cuts on the control socket: what survives a cut between a write
//! and its flush and after it, the handshake while power is off, and
//! `--flush-is-commit`'s groups.

mod common;

use common::*;
use std::io::Write;
use txftl_nbd::client::{info_request, ClientError};
use txftl_nbd::wire::*;
use txftl_nbd::CutSchedule;

/// A value of `page` bytes, one per tag.
fn value(tag: u8, page: u32) -> Vec<u8> {
    pattern(tag, page as usize)
}

fn expect_dropped(c: &mut txftl_nbd::client::Client<std::os::unix::net::UnixStream>, what: &str) {
    match c.read(0, 512) {
        Err(ClientError::Io(_)) => {}
        other => panic!("{what}: the cut drops the connection, got {other:?}"),
    }
}

/// While power is off: NBD_OPT_GO and NBD_OPT_INFO get REP_ERR_SHUTDOWN,
/// NBD_OPT_EXPORT_NAME closes, the control socket says so.
fn power_is_off(s: &TestServer) {
    let mut h = s.haggle();
    for option in [OPT_GO, OPT_INFO] {
        let r = h.option(option, &info_request(NAME, &[INFO_BLOCK_SIZE])).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].option, r[0].reply), (option, REP_ERR_SHUTDOWN));
        assert!(!r[0].data.is_empty());
    }
    // The rest of the haggling still works.
    assert_eq!(h.option(OPT_LIST, &[]).unwrap().last().unwrap().reply, REP_ACK);
    match s.try_connect(&opts(true, true)) {
        Err(ClientError::Nbd { errno, .. }) => assert_eq!(errno, REP_ERR_SHUTDOWN),
        Err(e) => panic!("connect while power is off: {e}"),
        Ok(_) => panic!("connect while power is off: it went through"),
    }
    let mut raw = s.haggle();
    OptionRequest {
        option: OPT_EXPORT_NAME,
        data: vec![],
    }
    .write(&mut raw.s)
    .unwrap();
    assert!(closed(&mut raw.s));
    assert_eq!(s.stats()["powered"], false);
    assert_eq!(s.ctl_result("power-cut"), Err("power is already off".to_string()));
    // The connection that haggled through the cut goes on once power is back.
    let report: serde_json::Value = serde_json::from_str(s.ctl("power-on").trim()).unwrap();
    assert!(report["time_ns"].as_u64().unwrap() > 0, "{report}");
    assert!(report["flash_reads"].as_u64().unwrap() > 0, "{report}");
    let r = h.option(OPT_GO, &info_request(NAME, &[])).unwrap();
    assert_eq!(r.last().unwrap().reply, REP_ACK);
    assert_eq!(s.ctl_result("power-on"), Err("power is on".to_string()));
}

fn cut_between_write_and_flush(protocol: &str) {
    let s = TestServer::start(protocol);
    let ps = s.page;
    let x = 7u64 * ps as u64;
    let (a, b, c_val) = (value(1, ps), value(2, ps), value(3, ps));
    let mut c = s.connect(true, true);
    c.write(x, &a, false).unwrap();
    c.flush().unwrap();
    c.write(x, &b, false).unwrap();
    let cut = s.ctl("power-cut");
    assert!(cut.starts_with("power off (cut 1)"), "{cut}");
    expect_dropped(&mut c, protocol);
    power_is_off(&s);
    let mut c = s.connect(true, true);
    let got = c.read(x, ps).unwrap();
    assert!(got == a || got == b, "{protocol}: page X holds neither A nor B after the cut");
    // The neighbours were never written.
    assert_eq!(c.read(x - ps as u64, ps).unwrap(), vec![0u8; ps as usize]);
    c.write(x, &c_val, false).unwrap();
    c.flush().unwrap();
    s.ctl("power-cut");
    expect_dropped(&mut c, protocol);
    s.ctl("power-on");
    let mut c = s.connect(false, false);
    assert_eq!(c.read(x, ps).unwrap(), c_val, "{protocol}: flushed C survives");
    let stats = s.stats();
    assert_eq!(stats["power_cuts"], 2);
    assert_eq!(stats["scheduled_cuts"], 0);
    let whys: Vec<_> = stats["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["why"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(whys, ["power-on", "power-on"]);
    assert!(s.logged("power cut (control socket)"), "{}", s.log_text());
}

#[test]
fn cut_between_write_and_flush_plain() {
    cut_between_write_and_flush("plain");
}

#[test]
fn cut_between_write_and_flush_xftl() {
    cut_between_write_and_flush("xftl");
}

#[test]
fn cut_between_write_and_flush_lighttx() {
    cut_between_write_and_flush("lighttx");
}

/// Several cuts in a row, with nothing written in between.
#[test]
fn cuts_in_a_row_keep_the_data() {
    let s = TestServer::start("xftl");
    let d = pattern(9, 3 * 512);
    let mut c = s.connect(true, true);
    c.write(1024, &d, true).unwrap();
    drop(c);
    for _ in 0..3 {
        s.cut_and_recover();
    }
    assert_eq!(s.connect(true, true).read(1024, 3 * 512).unwrap(), d);
    assert_eq!(s.stats()["power_cuts"], 3);
}

#[test]
fn unknown_control_command() {
    let s = TestServer::start("plain");
    let e = s.ctl_result("reboot").unwrap_err();
    assert!(e.contains("unknown command \"reboot\""), "{e}");
    assert!(s.ctl("stats").contains("protocol plain, power on"));
    let mut ctl = std::os::unix::net::UnixStream::connect(&s.ctl).unwrap();
    ctl.write_all(b"stats-json\n").unwrap();
}

/// `--flush-is-commit`: what is written between two flushes is one
/// transaction.
fn flush_is_commit(protocol: &str) {
    let s = TestServer::with(protocol, true, CutSchedule::default());
    let ps = s.page as u64;
    let (p0, p5) = (0, 5 * ps);
    let v = |tag: u8| value(tag, s.page);
    let mut c = s.connect(true, true);
    c.write(p0, &v(1), false).unwrap();
    c.write(p5, &v(2), false).unwrap();
    c.flush().unwrap();
    assert_eq!(s.stats()["groups_committed"], 1);
    // Two writes, no flush: a cut takes both.
    c.write(p0, &v(3), false).unwrap();
    c.write(p5, &v(4), false).unwrap();
    assert_eq!(c.read(p0, s.page).unwrap(), v(3), "a read sees the open group");
    s.ctl("power-cut");
    expect_dropped(&mut c, protocol);
    s.ctl("power-on");
    let mut c = s.connect(true, true);
    assert_eq!(c.read(p0, s.page).unwrap(), v(1), "{protocol}: page 0 old");
    assert_eq!(c.read(p5, s.page).unwrap(), v(2), "{protocol}: page 5 old");
    // Flushed: both new.
    c.write(p0, &v(5), false).unwrap();
    c.write(p5, &v(6), false).unwrap();
    c.flush().unwrap();
    s.ctl("power-cut");
    s.ctl("power-on");
    let mut c = s.connect(false, false);
    assert_eq!(c.read(p0, s.page).unwrap(), v(5), "{protocol}: page 0 new");
    assert_eq!(c.read(p5, s.page).unwrap(), v(6), "{protocol}: page 5 new");
    // A FUA write commits the group it joins, writes before it included.
    c.write(ps, &v(7), false).unwrap();
    c.write(2 * ps, &v(8), true).unwrap();
    // A trim in an open group waits for the group's commit.
    c.write(3 * ps, &v(9), false).unwrap();
    c.trim(p5, s.page).unwrap();
    s.cut_and_recover();
    let mut c = s.connect(false, false);
    assert_eq!(c.read(ps, s.page).unwrap(), v(7));
    assert_eq!(c.read(2 * ps, s.page).unwrap(), v(8));
    assert_eq!(
        c.read(3 * ps, s.page).unwrap(),
        vec![0u8; s.page as usize],
        "{protocol}: the cut group"
    );
    assert_eq!(
        c.read(p5, s.page).unwrap(),
        v(6),
        "{protocol}: a trim of an uncommitted group is gone"
    );
    c.write(3 * ps, &v(10), false).unwrap();
    c.trim(p5, s.page).unwrap();
    c.flush().unwrap();
    s.cut_and_recover();
    let mut c = s.connect(false, false);
    assert_eq!(c.read(3 * ps, s.page).unwrap(), v(10));
    assert_eq!(
        c.read(p5, s.page).unwrap(),
        vec![0u8; s.page as usize],
        "{protocol}: a committed trim"
    );
    let stats = s.stats();
    // The first flush, the second, the FUA write, the last flush; the cut
    // groups never committed.
    assert_eq!(stats["groups_committed"], 4, "{protocol}");
    assert_eq!(stats["groups_split"], 0);
    assert_eq!(stats["power_cuts"], 4);
}

/// `--flush-is-commit`: a trim sent while no group is open, then a flush:
/// the flush must make the trim durable (NBD: a flush covers every
/// completed write, NBD_CMD_TRIM included).
fn flush_is_commit_trim_outside_a_group(protocol: &str, fua: bool) {
    let s = TestServer::with(protocol, true, CutSchedule::default());
    let ps = s.page;
    let mut c = s.connect(true, true);
    c.write(0, &value(1, 2 * ps), false).unwrap();
    c.flush().unwrap();
    // No group is open now: the trim goes to the device at once.
    if fua {
        let h = c.send(CMD_TRIM, CMD_FLAG_FUA, 0, ps, &[]).unwrap();
        c.reply(h, None).unwrap();
    } else {
        c.trim(0, ps).unwrap();
        c.flush().unwrap();
    }
    assert_eq!(c.read(0, ps).unwrap(), vec![0u8; ps as usize]);
    s.cut_and_recover();
    let mut c = s.connect(true, true);
    let got = c.read(0, ps).unwrap();
    assert!(
        got == vec![0u8; ps as usize],
        "{protocol}: the flushed trim is lost in the cut: page 0 reads {} (its data before the trim: {})",
        describe(&got),
        describe(&value(1, ps))
    );
    assert_eq!(c.read(ps as u64, ps).unwrap(), value(1, 2 * ps)[ps as usize..]);
}

#[test]

fn flush_is_commit_trim_then_flush_xftl() {
    flush_is_commit_trim_outside_a_group("xftl", false);
}

#[test]

fn flush_is_commit_fua_trim_xftl() {
    flush_is_commit_trim_outside_a_group("xftl", true);
}

/// `--flush-is-commit`: partial-page writes patch the page as the open
/// group holds it, and commit or vanish with it.
#[test]
fn flush_is_commit_patches_through_the_group() {
    let s = TestServer::with("xftl", true, CutSchedule::default());
    let mut c = s.connect(true, false);
    let base = value(1, 512);
    c.write(0, &base, false).unwrap();
    c.flush().unwrap();
    let patched = |b: &[u8]| {
        let mut p = b.to_vec();
        p[10..110].fill(0xaa);
        p[300..400].fill(0xbb);
        p
    };
    for flush in [false, true] {
        c.write(10, &[0xaa; 100], false).unwrap();
        c.write(300, &[0xbb; 100], false).unwrap();
        assert_eq!(c.read(0, 512).unwrap(), patched(&base));
        if flush {
            c.flush().unwrap();
        }
        s.cut_and_recover();
        c = s.connect(true, false);
        let want = if flush { patched(&base) } else { base.clone() };
        assert_eq!(c.read(0, 512).unwrap(), want, "flushed: {flush}");
    }
    assert_eq!(s.stats()["partial_page_writes"], 4);
}

/// The same without `--flush-is-commit`: a flushed trim survives.
#[test]
fn trim_then_flush_without_flush_is_commit() {
    for protocol in ["plain", "xftl"] {
        let s = TestServer::start(protocol);
        let ps = s.page;
        let mut c = s.connect(true, true);
        c.write(0, &value(1, 2 * ps), false).unwrap();
        c.flush().unwrap();
        c.trim(0, ps).unwrap();
        c.flush().unwrap();
        s.cut_and_recover();
        let mut c = s.connect(true, true);
        assert_eq!(c.read(0, ps).unwrap(), vec![0u8; ps as usize], "{protocol}");
    }
}

#[test]
fn flush_is_commit_xftl() {
    flush_is_commit("xftl");
}

#[test]
fn flush_is_commit_lighttx() {
    flush_is_commit("lighttx");
}

/// A group larger than one transaction commits where it stands and goes on
/// in a new one (counted as split).
#[test]
fn flush_is_commit_group_split() {
    let bound = txftl_protocols::entry("xftl").unwrap().tx_pages_bound.unwrap();
    let opts = bound.apply(txftl_ftl::ProtocolOptions::default(), 4);
    let s = TestServer::serve("xftl", export_with("xftl", opts, true, CutSchedule::default()).unwrap());
    let mut c = s.connect(true, true);
    for p in 0..6u64 {
        c.write(p * 512, &value(p as u8, 512), false).unwrap();
    }
    let stats = s.stats();
    assert_eq!(stats["groups_split"], 1);
    assert_eq!(stats["groups_committed"], 1);
    s.cut_and_recover();
    let mut c = s.connect(true, true);
    for p in 0..6u64 {
        let want = if p < 4 { value(p as u8, 512) } else { vec![0; 512] };
        assert_eq!(c.read(p * 512, 512).unwrap(), want, "page {p}: the first 4 committed, the rest cut");
    }
}

/// Only a transactional protocol takes `--flush-is-commit`.
#[test]
fn flush_is_commit_needs_transactions() {
    for e in txftl_protocols::PROTOCOLS {
        match export(e.name, true, CutSchedule::default()) {
            Ok(_) => assert!(e.transactional, "{} has no transactions, yet took flush_is_commit", e.name),
            Err(msg) => {
                assert!(!e.transactional, "{}: {msg}", e.name);
                assert!(msg.contains("transactional"), "{msg}");
                assert!(msg.contains(e.name), "{msg}");
            }
        }
    }
    assert!(export("plain", true, CutSchedule::default()).is_err());
}

/// Stopping the server with connections open drops them and hands the
/// export back; closing it commits the open group (`--flush-is-commit`),
/// flushes, and the NAND mounts again with everything written.
#[test]
fn stop_with_open_connections_then_close() {
    for (protocol, group) in [("plain", false), ("xftl", true)] {
        let s = TestServer::with(protocol, group, CutSchedule::default());
        let mut c = s.connect(true, true);
        c.write(0, &value(1, 512), false).unwrap();
        c.flush().unwrap();
        c.write(512, &value(2, 3 * 512), false).unwrap();
        let mut idle = s.connect(false, false);
        let export = s.stop();
        expect_dropped(&mut c, protocol);
        expect_dropped(&mut idle, protocol);
        let nand = export.close().unwrap_or_else(|e| panic!("{protocol}: close: {e}"));
        let mut dev = txftl_protocols::mount(
            protocol,
            nand,
            txftl_ftl::FtlConfig::default(),
            &txftl_ftl::ProtocolOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{protocol}: mount after close: {e}"));
        let mut page = vec![0u8; 512];
        dev.read(0, &mut page).unwrap();
        assert_eq!(page, value(1, 512), "{protocol}");
        let v2 = value(2, 3 * 512);
        for p in 0..3 {
            dev.read(1 + p as u32, &mut page).unwrap();
            assert_eq!(page[..], v2[p * 512..(p + 1) * 512], "{protocol}: page {}", p + 1);
        }
    }
}
