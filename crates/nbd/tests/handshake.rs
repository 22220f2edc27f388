//! The fixed newstyle handshake, option by option: the greeting, the
//! options the server knows and the replies they get, the errors that let
//! haggling go on, and the ways into transmission.

mod common;

use common::*;
use std::io::{Read, Write};
use txftl_nbd::client::{info_request, Haggle};
use txftl_nbd::wire::*;

/// The flags every export announces (no trim, no DF).
const BASE_FLAGS: u16 = FLAG_HAS_FLAGS | FLAG_SEND_FLUSH | FLAG_SEND_FUA | FLAG_SEND_WRITE_ZEROES | FLAG_CAN_MULTI_CONN;
const MIB: u32 = 1024 * 1024;

fn reply(option: u32, reply: u32, data: &[u8]) -> OptionReply {
    OptionReply {
        option,
        reply,
        data: data.to_vec(),
    }
}

fn info_export_reply(option: u32, size: u64, flags: u16) -> OptionReply {
    reply(option, REP_INFO, &info_export(ExportInfo { size, flags }))
}

/// The size a fresh device of `protocol` has: its logical pages by its page size.
fn expected_size(protocol: &str) -> u64 {
    let info = device(protocol).info();
    info.logical_pages as u64 * info.page_size as u64
}

fn expected_flags(protocol: &str, structured: bool) -> u16 {
    let mut f = BASE_FLAGS;
    if txftl_protocols::entry(protocol).expect("known").trims {
        f |= FLAG_SEND_TRIM;
    }
    if structured {
        f |= FLAG_SEND_DF;
    }
    f
}

/// A read of the first page works on a client just connected.
fn read_works(c: &mut txftl_nbd::client::Client<std::os::unix::net::UnixStream>) {
    let d = c.read(0, 512).expect("a read after the handshake");
    assert_eq!(d, vec![0u8; 512]);
}

#[test]
fn greeting_is_fixed_newstyle_without_zeroes() {
    let s = TestServer::start("plain");
    let mut raw = s.stream();
    let mut g = [0u8; 18];
    raw.read_exact(&mut g).unwrap();
    assert_eq!(u64::from_be_bytes(g[0..8].try_into().unwrap()), NBDMAGIC);
    assert_eq!(u64::from_be_bytes(g[8..16].try_into().unwrap()), IHAVEOPT);
    assert_eq!(u16::from_be_bytes([g[16], g[17]]), FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES);
    assert_eq!(u16::from_be_bytes([g[16], g[17]]), 0b11);
    drop(raw);
    assert_eq!(s.haggle().handshake_flags, 3);
}

#[test]
fn opt_list_names_the_one_export() {
    let s = TestServer::start("plain");
    let mut h = s.haggle();
    let mut server = 5u32.to_be_bytes().to_vec();
    server.extend_from_slice(b"txftl");
    let want = vec![reply(OPT_LIST, REP_SERVER, &server), reply(OPT_LIST, REP_ACK, &[])];
    assert_eq!(h.option(OPT_LIST, &[]).unwrap(), want);
    // With data: refused, and the haggling goes on.
    let r = h.option(OPT_LIST, b"x").unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].option, r[0].reply), (OPT_LIST, REP_ERR_INVALID));
    assert_eq!(h.option(OPT_LIST, &[]).unwrap(), want);
}

#[test]
fn opt_info_gives_size_and_flags_for_every_protocol() {
    for e in txftl_protocols::PROTOCOLS {
        let s = TestServer::start(e.name);
        let size = expected_size(e.name);
        assert_eq!(s.size, size, "{}", e.name);
        let mut h = s.haggle();
        // No items asked for: the export's information alone, then ACK.
        let r = h.option(OPT_INFO, &info_request(NAME, &[])).unwrap();
        let plain_flags = expected_flags(e.name, false);
        assert_eq!(
            r,
            vec![info_export_reply(OPT_INFO, size, plain_flags), reply(OPT_INFO, REP_ACK, &[])],
            "{}",
            e.name
        );
        assert_eq!(plain_flags & FLAG_SEND_TRIM != 0, e.trims, "{}", e.name);
        assert_eq!(plain_flags & FLAG_READ_ONLY, 0);
        // Structured replies add DF; the default export ("") is the same export.
        assert_eq!(
            h.option(OPT_STRUCTURED_REPLY, &[]).unwrap(),
            vec![reply(OPT_STRUCTURED_REPLY, REP_ACK, &[])]
        );
        let r = h.option(OPT_INFO, &info_request("", &[])).unwrap();
        let flags = expected_flags(e.name, true);
        assert_eq!(
            r,
            vec![info_export_reply(OPT_INFO, size, flags), reply(OPT_INFO, REP_ACK, &[])],
            "{}",
            e.name
        );
        // NBD_OPT_GO then enters transmission with those flags.
        let mut c = s.connect(true, false);
        assert_eq!((c.size, c.flags), (size, flags), "{}", e.name);
        read_works(&mut c);
    }
}

#[test]
fn opt_info_answers_each_item_asked_for() {
    let s = TestServer::start("xftl");
    let mut h = s.haggle();
    let asked = [INFO_BLOCK_SIZE, INFO_NAME, 77, INFO_DESCRIPTION];
    let r = h.option(OPT_INFO, &info_request(NAME, &asked)).unwrap();
    let block = BlockSizes {
        minimum: 512,
        preferred: 512,
        maximum: 32 * MIB,
    };
    assert_eq!(block.preferred, s.page, "the preferred size is the flash page");
    let want = vec![
        info_export_reply(OPT_INFO, expected_size("xftl"), expected_flags("xftl", false)),
        reply(OPT_INFO, REP_INFO, &info_block_size(block)),
        reply(OPT_INFO, REP_INFO, &info_string(INFO_NAME, "txftl")),
        reply(OPT_INFO, REP_INFO, &info_string(INFO_DESCRIPTION, "txftl xftl device")),
        reply(OPT_INFO, REP_ACK, &[]),
    ];
    assert_eq!(r, want);
    // The block sizes' bytes, spelled out: type 3, 512, 512, 32 MiB.
    assert_eq!(r[1].data, [0, 3, 0, 0, 2, 0, 0, 0, 2, 0, 2, 0, 0, 0]);
    // NBD_OPT_GO with the same items answers the same way, then transmission.
    let r = h.option(OPT_GO, &info_request(NAME, &asked)).unwrap();
    let go: Vec<_> = want.into_iter().map(|w| reply(OPT_GO, w.reply, &w.data)).collect();
    assert_eq!(r, go);
}

#[test]
fn unknown_export_name_is_refused_and_haggling_goes_on() {
    let s = TestServer::start("plain");
    let mut h = s.haggle();
    for option in [OPT_INFO, OPT_GO] {
        let r = h.option(option, &info_request("nope", &[INFO_BLOCK_SIZE])).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].option, r[0].reply), (option, REP_ERR_UNKNOWN));
        assert!(String::from_utf8_lossy(&r[0].data).contains("nope"), "{:?}", r[0]);
    }
    let r = h.option(OPT_INFO, &info_request(NAME, &[])).unwrap();
    assert_eq!(r.last().unwrap().reply, REP_ACK);
}

#[test]
fn malformed_info_data_is_invalid_and_haggling_goes_on() {
    let s = TestServer::start("plain");
    let mut h = s.haggle();
    let good = info_request(NAME, &[INFO_NAME]);
    let long_name = info_request(&"n".repeat(4097), &[]);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("3 bytes", vec![0, 0, 0]),
        ("no count", good[..4 + NAME.len()].to_vec()),
        ("half a count", good[..4 + NAME.len() + 1].to_vec()),
        ("count of 1, no item", with_count(info_request(NAME, &[]), 1)),
        ("one byte too many", [good.clone(), vec![0]].concat()),
        ("name longer than the data", {
            let mut d = good.clone();
            d[3] = 200;
            d
        }),
        ("name over 4096 bytes", long_name),
    ];
    for option in [OPT_INFO, OPT_GO] {
        for (what, data) in &cases {
            let r = h.option(option, data).unwrap();
            assert_eq!(r.len(), 1, "{what}");
            assert_eq!((r[0].option, r[0].reply), (option, REP_ERR_INVALID), "{what}");
        }
    }
    let r = h.option(OPT_INFO, &good).unwrap();
    assert_eq!(r.last().unwrap().reply, REP_ACK);
    assert_eq!(r.len(), 3);
}

/// An info request's data with its item count set to `n`.
fn with_count(mut d: Vec<u8>, n: u16) -> Vec<u8> {
    let at = d.len() - 2;
    d[at..].copy_from_slice(&n.to_be_bytes());
    d
}

#[test]
fn unknown_options_get_errors_and_haggling_goes_on() {
    let s = TestServer::start("plain");
    let mut h = s.haggle();
    for (option, data, want) in [
        (99u32, &b""[..], REP_ERR_UNSUP),
        (99, b"some data", REP_ERR_UNSUP),
        (OPT_STARTTLS, b"", REP_ERR_POLICY),
        (4, b"", REP_ERR_UNSUP),  // NBD_OPT_PEEK_EXPORT (withdrawn)
        (10, b"", REP_ERR_UNSUP), // NBD_OPT_LIST_META_CONTEXT
        (0, b"", REP_ERR_UNSUP),
        (u32::MAX, b"", REP_ERR_UNSUP),
        (OPT_STRUCTURED_REPLY, b"x", REP_ERR_INVALID),
    ] {
        let r = h.option(option, data).unwrap();
        assert_eq!(r.len(), 1, "option {option}");
        assert_eq!((r[0].option, r[0].reply), (option, want), "option {option}");
        assert!(!r[0].data.is_empty(), "option {option}: an error carries a message");
    }
    // Still haggling: NBD_OPT_GO enters transmission.
    let r = h.option(OPT_GO, &info_request(NAME, &[])).unwrap();
    assert_eq!(r.last().unwrap(), &reply(OPT_GO, REP_ACK, &[]));
    let mut c = s.connect(false, false);
    read_works(&mut c);
}

#[test]
fn opt_abort_is_acknowledged_then_closed() {
    let s = TestServer::start("plain");
    let mut h = s.haggle();
    assert_eq!(h.option(OPT_ABORT, &[]).unwrap(), vec![reply(OPT_ABORT, REP_ACK, &[])]);
    assert!(closed(&mut h.s));
    // The server goes on.
    read_works(&mut s.connect(true, true));
}

/// Reads the greeting off a raw stream.
fn greeting(raw: &mut impl Read) {
    let mut g = [0u8; 18];
    raw.read_exact(&mut g).unwrap();
}

#[test]
fn opt_export_name_without_zeroes() {
    let s = TestServer::start("plain");
    let mut raw = s.stream();
    greeting(&mut raw);
    raw.write_all(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes()).unwrap();
    OptionRequest {
        option: OPT_EXPORT_NAME,
        data: NAME.as_bytes().to_vec(),
    }
    .write(&mut raw)
    .unwrap();
    let mut d = [0u8; 10];
    raw.read_exact(&mut d).unwrap();
    assert_eq!(u64::from_be_bytes(d[0..8].try_into().unwrap()), expected_size("plain"));
    assert_eq!(u16::from_be_bytes([d[8], d[9]]), expected_flags("plain", false));
    // Transmission right away: no zeroes in between, a read's reply comes next.
    raw.write_all(
        &Request {
            flags: 0,
            kind: CMD_READ,
            handle: 0xfeed,
            offset: 512,
            length: 4,
        }
        .encode(),
    )
    .unwrap();
    let mut r = [0u8; 20];
    raw.read_exact(&mut r).unwrap();
    assert_eq!(r[..16], simple_reply(0, 0xfeed));
    assert_eq!(r[16..], [0, 0, 0, 0]);
}

#[test]
fn opt_export_name_with_zeroes_when_the_client_wants_them() {
    let s = TestServer::start("plain");
    let mut raw = s.stream();
    greeting(&mut raw);
    raw.write_all(&FLAG_C_FIXED_NEWSTYLE.to_be_bytes()).unwrap();
    OptionRequest {
        option: OPT_EXPORT_NAME,
        data: vec![],
    }
    .write(&mut raw)
    .unwrap();
    let mut d = [0xffu8; 134];
    raw.read_exact(&mut d).unwrap();
    assert_eq!(u64::from_be_bytes(d[0..8].try_into().unwrap()), expected_size("plain"));
    assert_eq!(u16::from_be_bytes([d[8], d[9]]), expected_flags("plain", false));
    assert_eq!(d[10..], [0u8; 124]);
    raw.write_all(
        &Request {
            flags: 0,
            kind: CMD_READ,
            handle: 9,
            offset: 0,
            length: 1,
        }
        .encode(),
    )
    .unwrap();
    let mut r = [0u8; 17];
    raw.read_exact(&mut r).unwrap();
    assert_eq!(r[..16], simple_reply(0, 9));
}

#[test]
fn opt_export_name_through_the_client() {
    let s = TestServer::start("xftl");
    for structured in [false, true] {
        let o = txftl_nbd::client::Options {
            export: NAME.into(),
            structured,
            block_sizes: false,
            export_name: true,
        };
        let mut c = s.connect_with(&o);
        assert_eq!((c.size, c.flags), (expected_size("xftl"), expected_flags("xftl", structured)));
        assert_eq!(c.structured, structured);
        assert_eq!(c.block_sizes, None);
        c.write(100, b"export name", false).unwrap();
        assert_eq!(c.read(100, 11).unwrap(), b"export name");
        c.disconnect().unwrap();
    }
}

#[test]
fn opt_export_name_with_an_unknown_name_closes() {
    let s = TestServer::start("plain");
    let mut h = s.haggle();
    OptionRequest {
        option: OPT_EXPORT_NAME,
        data: b"other".to_vec(),
    }
    .write(&mut h.s)
    .unwrap();
    assert!(closed(&mut h.s));
    wait_for("the log", || s.logged("no export named \"other\""));
}

#[test]
fn client_flags_with_unknown_bits_close_the_connection() {
    let s = TestServer::start("plain");
    for flags in [1u32 << 2, FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES | (1 << 31), 0xffff_ffff] {
        let mut raw = s.stream();
        greeting(&mut raw);
        raw.write_all(&flags.to_be_bytes()).unwrap();
        assert!(closed(&mut raw), "client flags {flags:#x}");
        wait_for("the log", || s.logged(&format!("unknown client flags {flags:#x}")));
    }
    // Known flags only (even none at all) are taken.
    for flags in [0u32, FLAG_C_FIXED_NEWSTYLE, FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES] {
        let mut raw = s.stream();
        greeting(&mut raw);
        raw.write_all(&flags.to_be_bytes()).unwrap();
        let mut h = Haggle {
            s: raw,
            handshake_flags: 3,
        };
        assert_eq!(h.option(OPT_LIST, &[]).unwrap().len(), 2, "client flags {flags:#x}");
    }
}

/// The server on TCP (127.0.0.1, a free port) serves the same way.
#[test]
fn tcp_listener_serves() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let e = export("plain", false, Default::default()).unwrap();
    let server = txftl_nbd::Server::bind(&txftl_nbd::Listen::Tcp(0), None, e, Box::new(|_| {})).unwrap();
    let port = server.port().expect("a TCP port");
    assert_ne!(port, 0);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let t = std::thread::spawn(move || server.run(&flag));
    let stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut c = txftl_nbd::client::Client::connect(stream, &opts(true, true)).unwrap();
    assert_eq!((c.size, c.flags), (expected_size("plain"), expected_flags("plain", true)));
    c.write(512, &pattern(3, 1024), true).unwrap();
    assert_eq!(c.read(512, 1024).unwrap(), pattern(3, 1024));
    c.disconnect().unwrap();
    stop.store(true, Ordering::Relaxed);
    let e = t.join().unwrap();
    assert_eq!(e.stats.connections, 1);
    assert_eq!(e.stats.commands["write"].count, 1);
}
