//! Input no client should send, each on its own connection: the server
//! closes that connection (or answers with an error), keeps serving, and
//! loses nothing that was flushed.

mod common;

use common::*;
use std::io::Write;
use std::os::unix::net::UnixStream;
use txftl_nbd::client::Client;
use txftl_nbd::wire::*;

const PAGES: u32 = 6;

fn flushed_data(page: u32) -> Vec<u8> {
    pattern(77, (PAGES * page) as usize)
}

/// A server whose first pages hold flushed data; `case` abuses one
/// connection; then a new connection still works and the data is intact.
fn survives(protocol: &str, case: impl FnOnce(&TestServer, Client<UnixStream>)) -> TestServer {
    let s = TestServer::start(protocol);
    let mut c = s.connect(true, false);
    c.write(0, &flushed_data(s.page), false).unwrap();
    c.flush().unwrap();
    c.disconnect().unwrap();
    case(&s, s.connect(true, false));
    for (structured, block_sizes) in [(true, true), (false, false)] {
        let mut c = s.connect(structured, block_sizes);
        assert_eq!(
            c.read(0, PAGES * s.page).unwrap(),
            flushed_data(s.page),
            "{protocol}: the flushed data"
        );
        c.write(PAGES as u64 * s.page as u64, &pattern(5, s.page as usize), false).unwrap();
        assert_eq!(c.read(PAGES as u64 * s.page as u64, s.page).unwrap(), pattern(5, s.page as usize));
        c.flush().unwrap();
    }
    // And it survives a cut too: nothing was half-applied in the device.
    s.cut_and_recover();
    let mut c = s.connect(true, true);
    assert_eq!(c.read(0, PAGES * s.page).unwrap(), flushed_data(s.page), "{protocol}: after a cut");
    s
}

/// Sends `bytes` as they are, then waits for the server to close.
fn send_and_expect_close(c: &mut Client<UnixStream>, bytes: &[u8]) {
    // The server may close before it read every byte: a failed write is fine.
    let _ = c.stream().write_all(bytes);
    assert!(closed(c.stream()), "the server closes the connection");
}

fn header(kind: u16, offset: u64, length: u32) -> [u8; REQUEST_HEADER_LEN] {
    Request {
        flags: 0,
        kind,
        handle: 1,
        offset,
        length,
    }
    .encode()
}

#[test]
fn garbage_after_the_handshake() {
    for protocol in ["plain", "xftl"] {
        let s = survives(protocol, |_, mut c| {
            let garbage: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
            send_and_expect_close(&mut c, &garbage);
        });
        wait_for("the log", || s.logged("protocol violation, connection closed: request magic"));
    }
}

#[test]
fn a_truncated_request_header_then_close() {
    for protocol in ["plain", "xftl"] {
        survives(protocol, |_, mut c| {
            let h = header(CMD_WRITE, 0, 512);
            c.stream().write_all(&h[..17]).unwrap();
            c.stream().shutdown(std::net::Shutdown::Write).unwrap();
            assert!(closed(c.stream()));
        });
    }
}

#[test]
fn a_write_over_the_maximum_closes() {
    let s = survives("plain", |_, mut c| {
        send_and_expect_close(&mut c, &header(CMD_WRITE, 0, 40 * 1024 * 1024));
    });
    wait_for("the log", || s.logged("a write of 41943040 bytes, over the 33554432-byte maximum"));
    // Just over the maximum too (the data is never read).
    let s = survives("xftl", |_, mut c| {
        send_and_expect_close(&mut c, &header(CMD_WRITE, 0, 32 * 1024 * 1024 + 1));
    });
    wait_for("the log", || s.logged("a write of 33554433 bytes"));
}

#[test]
fn a_write_cut_short_then_close() {
    for protocol in ["plain", "xftl"] {
        survives(protocol, |s, mut c| {
            // Over flushed pages 1.. (4,096 bytes), with only 100 bytes of data.
            let mut m = header(CMD_WRITE, s.page as u64, 4096).to_vec();
            m.extend_from_slice(&[0xee; 100]);
            c.stream().write_all(&m).unwrap();
            c.stream().shutdown(std::net::Shutdown::Write).unwrap();
            assert!(closed(c.stream()));
        });
    }
}

#[test]
fn a_bad_request_magic_closes() {
    let s = survives("plain", |_, mut c| {
        let mut h = header(CMD_READ, 0, 512);
        h[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
        send_and_expect_close(&mut c, &h);
    });
    wait_for("the log", || s.logged(&format!("request magic {SIMPLE_REPLY_MAGIC:#x}")));
}

/// After a few good requests, a bad one: what came before stays.
#[test]
fn a_bad_magic_after_good_requests() {
    survives("xftl", |s, mut c| {
        c.write(0, &flushed_data(s.page), false).unwrap();
        assert_eq!(c.read(0, s.page).unwrap(), flushed_data(s.page)[..s.page as usize]);
        send_and_expect_close(&mut c, &[0u8; REQUEST_HEADER_LEN]);
    });
}

#[test]
fn garbage_during_the_handshake() {
    for protocol in ["plain", "xftl"] {
        let s = survives(protocol, |s, _| {
            // Garbage as the client flags.
            let mut raw = s.stream();
            let _ = raw.write_all(b"\xde\xad\xbe\xefgarbage garbage garbage");
            assert!(closed(&mut raw));
            // Good flags, then garbage where an option should be.
            let mut h = s.haggle();
            let _ = h.s.write_all(b"this is not IHAVEOPT, not at all");
            assert!(closed(&mut h.s));
            // A closed connection before the client flags, then in the middle of an option.
            drop(s.stream());
            let mut h = s.haggle();
            h.s.write_all(&IHAVEOPT.to_be_bytes()[..5]).unwrap();
            drop(h);
        });
        wait_for("the log", || s.logged("unknown client flags 0xdeadbeef"));
        wait_for("the log", || s.logged("option magic 0x7468697320697320"));
    }
}

#[test]
fn a_huge_option_closes() {
    let s = survives("plain", |s, _| {
        let mut h = s.haggle();
        let mut m = IHAVEOPT.to_be_bytes().to_vec();
        m.extend_from_slice(&OPT_GO.to_be_bytes());
        m.extend_from_slice(&(16 * 1024 + 1u32).to_be_bytes());
        let _ = h.s.write_all(&m);
        assert!(closed(&mut h.s));
        let mut h = s.haggle();
        m[12..16].copy_from_slice(&u32::MAX.to_be_bytes());
        let _ = h.s.write_all(&m);
        assert!(closed(&mut h.s));
    });
    wait_for("the log", || s.logged("option 7 of 16385 bytes"));
    wait_for("the log", || s.logged("option 7 of 4294967295 bytes"));
}

/// 16 KiB exactly is read, and refused as malformed: haggling goes on.
#[test]
fn an_option_of_the_largest_length_is_read() {
    survives("plain", |s, _| {
        let mut h = s.haggle();
        let r = h.option(OPT_GO, &vec![0xab; 16 * 1024]).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].option, r[0].reply), (OPT_GO, REP_ERR_INVALID));
        let r = h.option(99, &vec![0; 16 * 1024]).unwrap();
        assert_eq!(r[0].reply, REP_ERR_UNSUP);
        let r = h.option(OPT_LIST, &[]).unwrap();
        assert_eq!(r.last().unwrap().reply, REP_ACK);
    });
}

/// Many connections closed without NBD_CMD_DISC, some mid-request.
#[test]
fn connections_dropped_anywhere() {
    survives("xftl", |s, c| {
        drop(c);
        for cut in [0, 4, 17, 28, 29, 100] {
            let mut c = s.connect(cut % 2 == 0, false);
            let mut m = header(CMD_WRITE, 0, 512).to_vec();
            m.extend_from_slice(&[0x11; 512]);
            c.stream().write_all(&m[..cut.min(m.len() - 1)]).unwrap();
            drop(c);
        }
    });
}

/// One NBD_OPT_INFO asking for the description 8,000 times: some 300 KB of
/// replies, more than a socket buffers. A client that does not read them
/// (or reads them slowly) must stall its own connection only: another
/// connection's read goes on.
#[test]

fn a_client_that_does_not_read_its_option_replies_stalls_nobody() {
    let s = TestServer::start("plain");
    let mut other = s.connect(true, true);
    other.write(0, &pattern(1, 512), false).unwrap();
    let mut h = s.haggle();
    let asked = vec![INFO_DESCRIPTION; 8000];
    let request = txftl_nbd::client::info_request(NAME, &asked);
    assert!(request.len() <= 16 * 1024);
    OptionRequest {
        option: OPT_INFO,
        data: request,
    }
    .write(&mut h.s)
    .unwrap();
    // Let the server fill the socket and block; then read on the other connection.
    std::thread::sleep(std::time::Duration::from_millis(300));
    other.stream().set_read_timeout(Some(std::time::Duration::from_secs(3))).unwrap();
    let started = std::time::Instant::now();
    let read = other.read(0, 512);
    let waited = started.elapsed();
    // Unblock the server before asserting (so it can stop).
    h.s.shutdown(std::net::Shutdown::Both).unwrap();
    drop(h);
    assert!(
        read.is_ok(),
        "the other connection's read waited {waited:?} and failed: {:?}",
        read.err()
    );
    assert_eq!(read.unwrap(), pattern(1, 512));
    // And the control socket answers.
    assert!(s.ctl("stats").contains("power on"));
}

/// In transmission, a client that pipelines reads and does not read the
/// replies blocks only its own connection (the reply is written after the
/// export's lock is let go).
#[test]
fn a_client_that_does_not_read_its_replies_stalls_nobody() {
    let s = TestServer::start("plain");
    let mut other = s.connect(false, false);
    other.write(0, &pattern(1, 512), false).unwrap();
    let mut greedy = s.connect(true, false);
    let len = (s.size / 2) as u32;
    // About 7 MB of replies, unread.
    for _ in 0..200 {
        greedy.send(CMD_READ, 0, 0, len, &[]).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    other.stream().set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    assert_eq!(other.read(0, 512).unwrap(), pattern(1, 512));
    assert!(s.ctl("stats").contains("power on"));
    greedy.stream().shutdown(std::net::Shutdown::Both).unwrap();
}
