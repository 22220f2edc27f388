//! The server's half of the fixed newstyle handshake: the greeting, then
//! option haggling until the client picks the export (`NBD_OPT_GO`,
//! `NBD_OPT_EXPORT_NAME`) or leaves (`NBD_OPT_ABORT`, a closed socket).
//! An option this server does not know gets `NBD_REP_ERR_UNSUP`, never a
//! closed connection (what "fixed" fixed).

use crate::export::{Export, MAX_PAYLOAD};
use crate::wire::*;
use std::io::{self, Read, Write};
use std::sync::Mutex;

/// The smallest request the export takes when the client asked for block
/// sizes: a logical sector.
pub const SECTOR: u32 = 512;

/// What the handshake settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// Structured replies (`NBD_OPT_STRUCTURED_REPLY`).
    pub structured: bool,
    /// The client asked for block sizes (`NBD_INFO_BLOCK_SIZE`), so it
    /// promises to respect them: unaligned requests are refused (EINVAL).
    /// Without, any alignment is taken (a part page is read and patched).
    pub block_sizes: bool,
    pub flags: u16,
    pub size: u64,
}

/// Where the handshake ended.
pub enum Ending {
    Transmission(Negotiated),
    /// The client left, aborted, or broke the protocol: close.
    Closed(String),
}

/// The transmission flags this export announces (`trims`: the protocol takes trims).
pub fn transmission_flags(trims: bool, structured: bool) -> u16 {
    let mut f = FLAG_HAS_FLAGS | FLAG_SEND_FLUSH | FLAG_SEND_FUA | FLAG_SEND_WRITE_ZEROES | FLAG_CAN_MULTI_CONN;
    if trims {
        f |= FLAG_SEND_TRIM;
    }
    if structured {
        f |= FLAG_SEND_DF;
    }
    f
}

/// The block sizes announced: a sector, the flash page, the largest request.
pub fn block_sizes(export: &Export) -> BlockSizes {
    let page = export.info().page_size;
    BlockSizes {
        minimum: if page.is_multiple_of(SECTOR) { SECTOR } else { 1 },
        preferred: page.max(SECTOR).next_power_of_two(),
        maximum: MAX_PAYLOAD,
    }
}

/// Runs the handshake on `s` for the export behind `export`.
pub fn handshake<S: Read + Write>(s: &mut S, export: &Mutex<Export>) -> io::Result<Ending> {
    let mut greeting = NBDMAGIC.to_be_bytes().to_vec();
    greeting.extend_from_slice(&IHAVEOPT.to_be_bytes());
    greeting.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    s.write_all(&greeting)?;
    let client = read_u32(s)?;
    if client & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
        return Ok(Ending::Closed(format!("unknown client flags {client:#x}")));
    }
    let no_zeroes = client & FLAG_C_NO_ZEROES != 0;
    let mut structured = false;
    loop {
        let opt = match OptionRequest::read(s) {
            Ok(o) => o,
            Err(OptionReadError::Io(e)) => return Err(e),
            Err(OptionReadError::BadMagic(m)) => return Ok(Ending::Closed(format!("option magic {m:#x}"))),
            Err(OptionReadError::TooLong { option, len }) => {
                return Ok(Ending::Closed(format!("option {option} of {len} bytes")));
            }
        };
        let reply = |s: &mut S, kind: u32, data: &[u8]| write_option_reply(s, opt.option, kind, data);
        match opt.option {
            OPT_EXPORT_NAME => return export_name(s, export, &opt.data, structured, no_zeroes),
            OPT_ABORT => {
                reply(s, REP_ACK, &[])?;
                return Ok(Ending::Closed("the client aborted".to_string()));
            }
            OPT_LIST if !opt.data.is_empty() => reply(s, REP_ERR_INVALID, b"NBD_OPT_LIST takes no data")?,
            OPT_LIST => {
                let name = Facts::of(export).name;
                let mut d = (name.len() as u32).to_be_bytes().to_vec();
                d.extend_from_slice(name.as_bytes());
                reply(s, REP_SERVER, &d)?;
                reply(s, REP_ACK, &[])?;
            }
            OPT_STRUCTURED_REPLY if !opt.data.is_empty() => reply(s, REP_ERR_INVALID, b"takes no data")?,
            OPT_STRUCTURED_REPLY => {
                structured = true;
                reply(s, REP_ACK, &[])?;
            }
            OPT_STARTTLS => reply(s, REP_ERR_POLICY, b"no TLS: the server listens on a unix socket or 127.0.0.1")?,
            OPT_INFO | OPT_GO => {
                if let Some(n) = info_or_go(s, export, opt.option, &opt.data, structured)? {
                    if opt.option == OPT_GO {
                        return Ok(Ending::Transmission(n));
                    }
                }
            }
            _ => reply(s, REP_ERR_UNSUP, b"option not supported by txftl")?,
        }
    }
}

pub(crate) fn lock(export: &Mutex<Export>) -> std::sync::MutexGuard<'_, Export> {
    // A thread that panicked while holding the export left it as it was
    // between two device calls; serving goes on.
    export.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the handshake tells of the export, copied out under its lock so
/// that no reply is written while the lock is held (a client that does not
/// read its replies must stall no one else).
struct Facts {
    name: String,
    description: String,
    powered: bool,
    size: u64,
    trims: bool,
    sizes: BlockSizes,
}

impl Facts {
    fn of(export: &Mutex<Export>) -> Facts {
        let e = lock(export);
        Facts {
            name: e.config.name.clone(),
            description: format!("txftl {} device", e.entry().name),
            powered: e.powered(),
            size: e.size(),
            trims: e.entry().trims,
            sizes: block_sizes(&e),
        }
    }

    fn matches(&self, name: &[u8]) -> bool {
        name.is_empty() || name == self.name.as_bytes()
    }

    fn flags(&self, structured: bool) -> u16 {
        transmission_flags(self.trims, structured)
    }
}

/// `NBD_OPT_EXPORT_NAME`: no error can be sent, so a wrong name or a
/// device without power closes the connection.
fn export_name<S: Read + Write>(s: &mut S, export: &Mutex<Export>, name: &[u8], structured: bool, no_zeroes: bool) -> io::Result<Ending> {
    let f = Facts::of(export);
    if !f.matches(name) {
        return Ok(Ending::Closed(format!("no export named {:?}", String::from_utf8_lossy(name))));
    }
    if !f.powered {
        return Ok(Ending::Closed("power is off".to_string()));
    }
    let n = Negotiated {
        structured,
        block_sizes: false,
        flags: f.flags(structured),
        size: f.size,
    };
    let mut d = n.size.to_be_bytes().to_vec();
    d.extend_from_slice(&n.flags.to_be_bytes());
    if !no_zeroes {
        d.extend_from_slice(&[0u8; 124]);
    }
    s.write_all(&d)?;
    Ok(Ending::Transmission(n))
}

/// `NBD_OPT_INFO` and `NBD_OPT_GO`: the export's information, the
/// requested items, then `NBD_REP_ACK`; Some after an ACK.
fn info_or_go<S: Read + Write>(
    s: &mut S,
    export: &Mutex<Export>,
    option: u32,
    data: &[u8],
    structured: bool,
) -> io::Result<Option<Negotiated>> {
    let reply = |s: &mut S, kind: u32, d: &[u8]| write_option_reply(s, option, kind, d);
    let Some((name, requests)) = parse_info_request(data) else {
        reply(s, REP_ERR_INVALID, b"malformed NBD_OPT_INFO/NBD_OPT_GO data")?;
        return Ok(None);
    };
    let f = Facts::of(export);
    if !f.matches(name) {
        reply(
            s,
            REP_ERR_UNKNOWN,
            format!("no export named {:?}", String::from_utf8_lossy(name)).as_bytes(),
        )?;
        return Ok(None);
    }
    if !f.powered {
        reply(s, REP_ERR_SHUTDOWN, b"the device's power is off (txftl nbd ctl power-on)")?;
        return Ok(None);
    }
    let n = Negotiated {
        structured,
        block_sizes: requests.contains(&INFO_BLOCK_SIZE),
        flags: f.flags(structured),
        size: f.size,
    };
    reply(
        s,
        REP_INFO,
        &info_export(ExportInfo {
            size: n.size,
            flags: n.flags,
        }),
    )?;
    for r in requests {
        match r {
            INFO_NAME => reply(s, REP_INFO, &info_string(INFO_NAME, &f.name))?,
            INFO_DESCRIPTION => reply(s, REP_INFO, &info_string(INFO_DESCRIPTION, &f.description))?,
            INFO_BLOCK_SIZE => reply(s, REP_INFO, &info_block_size(f.sizes))?,
            _ => {} // unknown requests are ignored, as the specification says
        }
    }
    reply(s, REP_ACK, &[])?;
    Ok(Some(n))
}

/// u32 name length, name, u16 count, count x u16: None if the lengths do not add up.
fn parse_info_request(d: &[u8]) -> Option<(&[u8], Vec<u16>)> {
    let len = u32::from_be_bytes(d.get(0..4)?.try_into().ok()?) as usize;
    if len > STRING_MAX {
        return None;
    }
    let name = d.get(4..4 + len)?;
    let count = u16::from_be_bytes(d.get(4 + len..6 + len)?.try_into().ok()?) as usize;
    let rest = d.get(6 + len..)?;
    if rest.len() != 2 * count {
        return None;
    }
    Some((name, rest.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect()))
}
