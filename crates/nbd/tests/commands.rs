//! Every command, with and without structured replies, on a protocol
//! without transactions (plain) and one with (xftl); every error a request
//! can get, each followed by a request that works; two connections at once.

mod common;

use common::*;
use std::os::unix::net::UnixStream;
use txftl_nbd::client::{Client, ClientError};
use txftl_nbd::wire::*;

type C = Client<UnixStream>;
const PROTOCOLS: [&str; 2] = ["plain", "xftl"];
const MAX: u32 = 32 * 1024 * 1024;

fn stat(s: &TestServer, key: &str) -> u64 {
    s.stats()[key].as_u64().unwrap_or_else(|| panic!("stats key {key}"))
}

/// Writes whole pages and reads them back, at the start, middle and end.
fn aligned_round_trip(s: &TestServer, c: &mut C) {
    let ps = s.page as usize;
    for (first, pages, seed) in [(0u64, 1usize, 1u8), (3, 4, 2), (s.size / s.page as u64 - 2, 2, 3)] {
        let data = pattern(seed, pages * ps);
        c.write(first * ps as u64, &data, false).unwrap();
        assert_eq!(c.read(first * ps as u64, data.len() as u32).unwrap(), data, "pages {first}+{pages}");
    }
    // A read across what was written and what was not.
    let r = c.read(2 * ps as u64, 2 * ps as u32).unwrap();
    assert_eq!(r[..ps], vec![0u8; ps][..]);
    assert_eq!(r[ps..], pattern(2, ps)[..]);
}

/// Without block sizes asked for, any offset and length is taken: a part
/// page is read, patched and written whole.
fn unaligned_round_trip(s: &TestServer, c: &mut C) {
    let ps = s.page as u64;
    let before = stat(s, "partial_page_writes");
    // 100 bytes across the boundary of pages 13 and 14 (7,168 on 512-byte pages).
    let at = 14 * ps - 68;
    let data = pattern(9, 100);
    c.write(at, &data, false).unwrap();
    assert_eq!(stat(s, "partial_page_writes"), before + 2);
    let around = c.read(at - 300, 700).unwrap();
    assert_eq!(around[..300], vec![0u8; 300][..]);
    assert_eq!(around[300..400], data[..]);
    assert_eq!(around[400..], vec![0u8; 300][..]);
    // An odd read inside the write.
    assert_eq!(c.read(at + 7, 3).unwrap(), data[7..10]);
    // Bytes patched into a page written before keep the rest of it.
    let page = pattern(10, ps as usize);
    c.write(20 * ps, &page, false).unwrap();
    c.write(20 * ps + 1, b"ab", false).unwrap();
    let mut want = page.clone();
    want[1..3].copy_from_slice(b"ab");
    assert_eq!(c.read(20 * ps, ps as u32).unwrap(), want);
    // The last byte of the export (its last two pages hold pattern 3).
    c.write(s.size - 1, &[0x5a], false).unwrap();
    let last = pattern(3, 2 * ps as usize);
    assert_eq!(c.read(s.size - 3, 3).unwrap(), [last[last.len() - 3], last[last.len() - 2], 0x5a]);
}

fn write_zeroes_reads_back_zeros(s: &TestServer, c: &mut C, aligned: bool) {
    let ps = s.page as u64;
    let base = 30 * ps;
    let data = pattern(11, 4 * ps as usize);
    c.write(base, &data, false).unwrap();
    let (off, len) = if aligned {
        (ps, 2 * ps as u32)
    } else {
        (ps - 100, 2 * ps as u32 + 37)
    };
    c.write_zeroes(base + off, len).unwrap();
    let mut want = data.clone();
    want[off as usize..off as usize + len as usize].fill(0);
    assert_eq!(c.read(base, 4 * ps as u32).unwrap(), want);
    // With FUA and NO_HOLE.
    let h = c
        .send(CMD_WRITE_ZEROES, CMD_FLAG_FUA | CMD_FLAG_NO_HOLE, base, ps as u32, &[])
        .unwrap();
    c.reply(h, None).unwrap();
    want[..ps as usize].fill(0);
    assert_eq!(c.read(base, 4 * ps as u32).unwrap(), want);
}

/// A trim of whole pages reads back zeros on this FTL (the pages are
/// unmapped); a trim of part of a page leaves it as it is (a hint).
fn trim_then_read(s: &TestServer, c: &mut C) {
    let ps = s.page as u64;
    let base = 40 * ps;
    let data = pattern(12, 4 * ps as usize);
    c.write(base, &data, false).unwrap();
    c.flush().unwrap();
    // Pages 41 and 42 whole, and 100 bytes of page 40 and of 43.
    c.trim(base + ps - 100, 2 * ps as u32 + 200).unwrap();
    let mut want = data.clone();
    want[ps as usize..3 * ps as usize].fill(0);
    assert_eq!(c.read(base, 4 * ps as u32).unwrap(), want);
    // A trim inside one page changes nothing.
    c.trim(base + 10, 100).unwrap();
    assert_eq!(c.read(base, 4 * ps as u32).unwrap(), want);
    // Flushed, the trim survives a power cut.
    c.flush().unwrap();
    s.cut_and_recover();
    let mut c2 = s.connect(c.structured, c.block_sizes.is_some());
    assert_eq!(c2.read(base, 4 * ps as u32).unwrap(), want);
    *c = c2;
}

/// A write with FUA is durable when it is acknowledged: it survives a cut
/// with no flush after it.
fn fua_write_survives_a_cut(s: &TestServer, c: &mut C) {
    let ps = s.page as u64;
    let a = pattern(13, 2 * ps as usize);
    let h = c.send(CMD_WRITE, CMD_FLAG_FUA, 50 * ps, a.len() as u32, &a).unwrap();
    c.reply(h, None).unwrap();
    s.cut_and_recover();
    let mut c2 = s.connect(c.structured, c.block_sizes.is_some());
    assert_eq!(c2.read(50 * ps, a.len() as u32).unwrap(), a);
    *c = c2;
}

/// Flush, a read with FUA (and DF when structured), NBD_CMD_DISC.
fn flush_flags_and_disconnect(s: &TestServer, c: C) {
    let mut c = c;
    c.flush().unwrap();
    let h = c.send(CMD_FLUSH, CMD_FLAG_FUA, 0, 0, &[]).unwrap();
    c.reply(h, None).unwrap();
    let flags = if c.structured { CMD_FLAG_FUA | CMD_FLAG_DF } else { CMD_FLAG_FUA };
    let h = c.send(CMD_READ, flags, 0, s.page, &[]).unwrap();
    assert_eq!(c.reply(h, Some(s.page)).unwrap(), pattern(1, s.page as usize));
    c.disconnect().expect("NBD_CMD_DISC: the server closes");
}

fn every_command(protocol: &str, structured: bool) {
    let s = TestServer::start(protocol);
    let mut c = s.connect(structured, false);
    assert_eq!(c.structured, structured);
    aligned_round_trip(&s, &mut c);
    unaligned_round_trip(&s, &mut c);
    write_zeroes_reads_back_zeros(&s, &mut c, true);
    write_zeroes_reads_back_zeros(&s, &mut c, false);
    trim_then_read(&s, &mut c);
    fua_write_survives_a_cut(&s, &mut c);
    flush_flags_and_disconnect(&s, c);
    // The server goes on after a disconnect; what was flushed is there.
    let mut c = s.connect(structured, true);
    assert_eq!(c.read(0, s.page).unwrap(), pattern(1, s.page as usize));
    let stats = s.stats();
    assert_eq!(stats["power_cuts"], 2);
    assert_eq!(stats["commands"]["read"]["errors"], 0);
    assert_eq!(stats["commands"]["write"]["errors"], 0);
    let atomic = stats["atomic_writes"].as_u64().unwrap();
    if s.entry.transactional {
        assert!(atomic > 0, "multi-page writes on {protocol} are device transactions");
    } else {
        assert_eq!(atomic, 0);
    }
    assert!(!s.logged("ended"), "no connection ended abnormally:\n{}", s.log_text());
}

#[test]
fn every_command_plain_simple() {
    every_command("plain", false);
}

#[test]
fn every_command_plain_structured() {
    every_command("plain", true);
}

#[test]
fn every_command_xftl_simple() {
    every_command("xftl", false);
}

#[test]
fn every_command_xftl_structured() {
    every_command("xftl", true);
}

/// A raw request: type, flags, offset, length, the data a write carries.
type Req<'a> = (u16, u16, u64, u32, &'a [u8]);

/// Sends one request and expects error `errno`; a structured error carries
/// a message. Then the connection still works.
fn expect_error(c: &mut C, what: &str, req: Req, errno: u32, page: u32, first_page: &[u8]) {
    let (kind, flags, offset, length, data) = req;
    let h = c.send(kind, flags, offset, length, data).unwrap();
    let read_len = (kind == CMD_READ).then_some(length);
    match c.reply(h, read_len) {
        Err(ClientError::Nbd { errno: e, message }) => {
            assert_eq!(e, errno, "{what}: {} instead of {}", error_name(e), error_name(errno));
            if c.structured {
                assert!(!message.is_empty(), "{what}: a structured error carries a message");
            } else {
                assert!(message.is_empty(), "{what}");
            }
        }
        other => panic!("{what}: {other:?}, expected {}", error_name(errno)),
    }
    assert_eq!(
        c.read(0, page).unwrap_or_else(|e| panic!("a read after {what}: {e}")),
        first_page,
        "after {what}"
    );
}

fn errors(protocol: &str, structured: bool) {
    let s = TestServer::start(protocol);
    let ps = s.page;
    let size = s.size;
    let mut c = s.connect(structured, true);
    assert_eq!(c.block_sizes.map(|b| (b.minimum, b.preferred, b.maximum)), Some((512, 512, MAX)));
    let first = pattern(1, ps as usize);
    c.write(0, &first, false).unwrap();
    c.flush().unwrap();
    let page = vec![7u8; ps as usize];
    let two = vec![8u8; 2 * ps as usize];
    let cases: Vec<(&str, Req, u32)> = vec![
        ("a read at the end", (CMD_READ, 0, size, ps, &[]), EINVAL),
        ("a read across the end", (CMD_READ, 0, size - ps as u64, 2 * ps, &[]), EINVAL),
        ("a read whose end overflows", (CMD_READ, 0, u64::MAX - 511, ps, &[]), EINVAL),
        ("a write at the end", (CMD_WRITE, 0, size, ps, &page), ENOSPC),
        ("a write across the end", (CMD_WRITE, 0, size - ps as u64, 2 * ps, &two), ENOSPC),
        ("a write whose end overflows", (CMD_WRITE, 0, u64::MAX - 511, ps, &page), ENOSPC),
        ("write zeroes past the end", (CMD_WRITE_ZEROES, 0, size, ps, &[]), ENOSPC),
        ("a read of 0 bytes", (CMD_READ, 0, 0, 0, &[]), EINVAL),
        ("a write of 0 bytes", (CMD_WRITE, 0, 0, 0, &[]), EINVAL),
        ("write zeroes of 0 bytes", (CMD_WRITE_ZEROES, 0, 0, 0, &[]), EINVAL),
        ("a trim of 0 bytes", (CMD_TRIM, 0, 0, 0, &[]), EINVAL),
        ("an unaligned read offset", (CMD_READ, 0, 100, ps, &[]), EINVAL),
        ("an unaligned read length", (CMD_READ, 0, 0, 100, &[]), EINVAL),
        ("an unaligned write", (CMD_WRITE, 0, 0, 100, &page[..100]), EINVAL),
        ("an unaligned write offset", (CMD_WRITE, 0, 1, ps, &page), EINVAL),
        ("unaligned write zeroes", (CMD_WRITE_ZEROES, 0, 0, 513, &[]), EINVAL),
        ("an unaligned trim", (CMD_TRIM, 0, 256, ps, &[]), EINVAL),
        ("command 5 (NBD_CMD_CACHE)", (5, 0, 0, ps, &[]), EINVAL),
        ("command 7 (NBD_CMD_BLOCK_STATUS)", (7, 0, 0, ps, &[]), EINVAL),
        ("command 99", (99, 0, 0, ps, &[]), EINVAL),
        ("DF on a write", (CMD_WRITE, CMD_FLAG_DF, ps as u64, ps, &page), EINVAL),
        ("NO_HOLE on a write", (CMD_WRITE, CMD_FLAG_NO_HOLE, ps as u64, ps, &page), EINVAL),
        ("NO_HOLE on a read", (CMD_READ, CMD_FLAG_NO_HOLE, 0, ps, &[]), EINVAL),
        ("an unknown flag on a read", (CMD_READ, 1 << 9, 0, ps, &[]), EINVAL),
        ("an unknown flag on a flush", (CMD_FLUSH, 1 << 15, 0, 0, &[]), EINVAL),
        ("DF on a trim", (CMD_TRIM, CMD_FLAG_DF, 0, ps, &[]), EINVAL),
        ("a read over 32 MiB", (CMD_READ, 0, 0, MAX + 512, &[]), EOVERFLOW),
        ("a read of u32::MAX bytes", (CMD_READ, 0, 0, u32::MAX, &[]), EOVERFLOW),
    ];
    for (what, req, errno) in cases {
        expect_error(&mut c, what, req, errno, ps, &first);
    }
    if !structured {
        expect_error(
            &mut c,
            "DF on a read without structured replies",
            (CMD_READ, CMD_FLAG_DF, 0, ps, &[]),
            EINVAL,
            ps,
            &first,
        );
    }
    // Not one refused write reached the device: page 1 was never written.
    assert_eq!(c.read(ps as u64, ps).unwrap(), vec![0u8; ps as usize]);
    assert_eq!(c.read(size - ps as u64, ps).unwrap(), vec![0u8; ps as usize]);
    drop(c);
    assert_eq!(s.stats()["connections"], 1, "one connection did it all");
}

#[test]
fn errors_plain_simple() {
    errors("plain", false);
}

#[test]
fn errors_plain_structured() {
    errors("plain", true);
}

#[test]
fn errors_xftl_simple() {
    errors("xftl", false);
}

#[test]
fn errors_xftl_structured() {
    errors("xftl", true);
}

/// NBD (doc/proto.md, "Error values"): "It SHOULD return `EINVAL` if it
/// receives a read or trim request including one or more sectors beyond
/// the size of the device" (ENOSPC is for writes).
#[test]

fn trim_past_the_end_is_einval() {
    for structured in [false, true] {
        let s = TestServer::start("plain");
        let mut c = s.connect(structured, true);
        let first = pattern(1, 512);
        c.write(0, &first, false).unwrap();
        let req = (CMD_TRIM, 0, s.size - 512, 1024, &[][..]);
        expect_error(&mut c, "a trim past the end", req, EINVAL, 512, &first);
    }
}

/// A trim past the end changes nothing, whatever it answers.
#[test]
fn trim_past_the_end_is_refused() {
    let s = TestServer::start("plain");
    let mut c = s.connect(true, true);
    let last = s.size - 512;
    c.write(last, &pattern(4, 512), false).unwrap();
    let e = c.trim(last, 1024).unwrap_err();
    assert!(
        matches!(e, ClientError::Nbd { errno, .. } if errno == EINVAL || errno == ENOSPC),
        "{e}"
    );
    assert_eq!(c.read(last, 512).unwrap(), pattern(4, 512), "the refused trim left the last page");
}

/// Every page of the export written over and over (the FTL collects
/// garbage underneath), read back, and again after a cut.
#[test]
fn fill_the_export_repeatedly() {
    for protocol in PROTOCOLS {
        let s = TestServer::start(protocol);
        let mut c = s.connect(true, true);
        let chunk = 4 * s.page;
        let chunks = (s.size / chunk as u64) as u8;
        for round in 0..5u8 {
            for k in 0..chunks {
                c.write(
                    k as u64 * chunk as u64,
                    &pattern(round.wrapping_mul(50).wrapping_add(k), chunk as usize),
                    false,
                )
                .unwrap_or_else(|e| panic!("{protocol}: round {round}, chunk {k}: {e}"));
            }
            c.flush().unwrap();
        }
        s.cut_and_recover();
        let mut c = s.connect(false, false);
        for k in 0..chunks {
            let got = c.read(k as u64 * chunk as u64, chunk).unwrap();
            assert!(
                got == pattern(200u8.wrapping_add(k), chunk as usize),
                "{protocol}: chunk {k} reads {}",
                describe(&got)
            );
        }
        assert!(
            s.stats()["device"]["gc_runs"].as_u64().unwrap() > 0,
            "{protocol}: the rounds needed GC"
        );
    }
}

/// A protocol that takes no trims does not offer them, and refuses one.
#[test]
fn trim_refused_where_not_offered() {
    let s = TestServer::start("scc");
    assert!(!s.entry.trims);
    let mut c = s.connect(true, true);
    assert_eq!(c.flags & FLAG_SEND_TRIM, 0);
    c.write(0, &pattern(1, 512), false).unwrap();
    match c.trim(0, 512) {
        Err(ClientError::Nbd { errno, message }) => {
            assert_eq!(errno, EINVAL);
            assert!(message.contains("trim"), "{message}");
        }
        other => panic!("a trim on scc: {other:?}"),
    }
    assert_eq!(c.read(0, 512).unwrap(), pattern(1, 512));
}

/// A write larger than one transaction of the protocol can hold fails
/// whole (ENOSPC), leaving every page it covers as it was.
#[test]
fn xftl_write_over_the_transaction_bound_fails_whole() {
    let bound = txftl_protocols::entry("xftl").unwrap().tx_pages_bound.expect("xftl has a bound");
    let opts = bound.apply(txftl_ftl::ProtocolOptions::default(), 4);
    let e = export_with("xftl", opts, false, Default::default()).unwrap();
    let s = TestServer::serve("xftl", e);
    let mut c = s.connect(true, true);
    let old = pattern(1, 8 * 512);
    c.write(0, &old, false).unwrap_err();
    for p in 0..8u64 {
        c.write(p * 512, &old[p as usize * 512..(p as usize + 1) * 512], false).unwrap();
    }
    c.flush().unwrap();
    let new = pattern(2, 8 * 512);
    match c.write(0, &new, false) {
        Err(ClientError::Nbd { errno, message }) => {
            assert_eq!(errno, ENOSPC);
            assert!(message.contains("transaction"), "{message}");
        }
        other => panic!("an 8-page write over a 4-page bound: {other:?}"),
    }
    assert_eq!(c.read(0, 8 * 512).unwrap(), old, "the refused write left nothing behind");
    // 4 pages fit in one transaction.
    c.write(0, &new[..4 * 512], false).unwrap();
    assert_eq!(c.read(0, 4 * 512).unwrap(), new[..4 * 512]);
    let stats = s.stats();
    assert_eq!(stats["commands"]["write"]["errors"], 2);
    assert_eq!(stats["device"]["aborts"], 2);
}

/// CAN_MULTI_CONN: a flush on one connection covers the writes another
/// had acknowledged.
#[test]
fn two_connections_at_once() {
    for protocol in PROTOCOLS {
        let s = TestServer::start(protocol);
        let mut a = s.connect(true, true);
        let mut b = s.connect(false, false);
        assert_ne!(a.flags & FLAG_CAN_MULTI_CONN, 0);
        let d = pattern(21, 3 * 512);
        a.write(512, &d, false).unwrap();
        assert_eq!(b.read(512, 3 * 512).unwrap(), d, "{protocol}: b sees a's write");
        b.flush().unwrap();
        assert_eq!(a.read(512, 3 * 512).unwrap(), d, "{protocol}");
        b.write(4 * 512, &pattern(22, 512), false).unwrap();
        a.flush().unwrap();
        assert_eq!(s.stats()["connections"], 2);
        s.cut_and_recover();
        for (name, c) in [("a", &mut a), ("b", &mut b)] {
            assert!(
                matches!(c.read(0, 512), Err(ClientError::Io(_))),
                "{protocol}: {name} was dropped by the cut"
            );
        }
        let mut c = s.connect(true, true);
        assert_eq!(c.read(512, 3 * 512).unwrap(), d, "{protocol}: flushed on b, written on a");
        assert_eq!(
            c.read(4 * 512, 512).unwrap(),
            pattern(22, 512),
            "{protocol}: flushed on a, written on b"
        );
    }
}

/// The server's counters, command by command, exactly.
#[test]
fn stats_count_commands() {
    for protocol in PROTOCOLS {
        let s = TestServer::start(protocol);
        let mut c = s.connect(true, false);
        c.write(0, &pattern(1, 3 * 512), false).unwrap();
        c.write(4 * 512 + 10, &pattern(2, 20), false).unwrap();
        c.read(0, 1000).unwrap();
        c.read(7, 1).unwrap();
        c.write_zeroes(512, 1024).unwrap();
        c.trim(0, 512).unwrap();
        c.flush().unwrap();
        c.flush().unwrap();
        c.read(s.size, 512).unwrap_err();
        let st = s.stats();
        let cmd = |k: &str, f: &str| st["commands"][k][f].as_u64().unwrap_or_else(|| panic!("{k}.{f}: {st}"));
        assert_eq!((cmd("write", "count"), cmd("write", "bytes")), (2, 3 * 512 + 20), "{protocol}");
        assert_eq!((cmd("read", "count"), cmd("read", "bytes")), (2, 1001), "{protocol}");
        assert_eq!(
            (cmd("write_zeroes", "count"), cmd("write_zeroes", "bytes")),
            (1, 1024),
            "{protocol}"
        );
        assert_eq!((cmd("trim", "count"), cmd("trim", "bytes")), (1, 512), "{protocol}");
        assert_eq!(cmd("flush", "count"), 2, "{protocol}");
        let transactional = u64::from(s.entry.transactional);
        // The 3-page write and the 2-page write zeroes.
        assert_eq!(st["atomic_writes"], 2 * transactional, "{protocol}");
        assert_eq!(st["partial_page_writes"], 1, "{protocol}");
        assert_eq!(st["protocol"], protocol);
        assert_eq!(st["connections"], 1);
        let table = s.ctl("stats");
        assert!(table.contains(&format!("protocol {protocol}, power on")), "{table}");
        assert!(table.contains("partial_page_writes"), "{table}");
    }
}

/// Two connections patching two halves of one page, over and over: each
/// read-patch-write runs whole, so neither loses the other's bytes.
#[test]
fn concurrent_partial_writes_to_one_page() {
    let s = TestServer::start("xftl");
    let rounds = 40u8;
    std::thread::scope(|scope| {
        for half in 0..2u64 {
            let s = &s;
            std::thread::Builder::new()
                .name(format!("writer-{half}"))
                .spawn_scoped(scope, move || {
                    let mut c = s.connect(half == 0, false);
                    for r in 1..=rounds {
                        c.write(3 * 512 + half * 256, &[r + half as u8 * 100; 256], false).unwrap();
                    }
                })
                .unwrap();
        }
    });
    let page = s.connect(true, false).read(3 * 512, 512).unwrap();
    assert_eq!(page[..256], [rounds; 256]);
    assert_eq!(page[256..], [rounds + 100; 256]);
    assert_eq!(s.stats()["partial_page_writes"], 2 * rounds as u64);
}
