//! blkparse's default text output (blktrace traces as `blkparse -i DEV` prints them):
//!
//! ```text
//!   8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kworker/u8:2]
//!   8,0    0        4     0.000412000   215  Q FWS [jbd2/sda1-8]
//! ```
//!
//! The fields are `major,minor cpu sequence seconds.nanoseconds pid action
//! RWBS`, then for a request `sector + sectors [process]` (or only `[process]`
//! when it has no sectors). This is blkparse's `process_default` layout; a
//! custom `-f`/`-F` format is not read.
//!
//! Which lines are requests:
//! - By default the queue (`Q`) events: one per bio as the file system or
//!   application submitted it, before the block layer merges or splits
//!   anything, which is what a replay should submit. [`Events::Issue`] takes
//!   the issue (`D`) events instead: the requests the driver sent the device,
//!   after merging. Every other action (`G`, `I`, `M`, `C`, `P`, `U`, `A`, `m`…)
//!   is skipped.
//! - A line is an event line when its first field is `major,minor`; any other
//!   line (the summary block blkparse prints at the end, `CPU0 (8,0):`,
//!   `Total (8,0):`, `Throughput …`, `Events …`, blank lines) is skipped. An
//!   event line that cannot be read is an error.
//!
//! The RWBS field is blkparse's `fill_rwbs` (blkparse_fmt.c): an optional `F`
//! first (a preflush), one of `D` (discard), `W` (write), `R` (read), `N` (no
//! data), then optional `F` (FUA), `A` (read-ahead), `S` (sync), `M` (metadata);
//! `E` (secure erase, the kernel tracepoint's spelling) is accepted after `D`.
//! The requests a line gives, all at the line's time:
//! - `D` is a [`ReqKind::Trim`], `W` a write, `R` a read, of `sectors` × 512 bytes.
//! - A leading `F` (preflush) is a [`ReqKind::Flush`] *before* the request:
//!   the kernel flushes the cache before it writes (`FWS` = flush, write).
//! - A `F` after a `W` (FUA) is a flush *after* the write: the write must be
//!   durable when it completes. A flush makes every earlier write durable, so
//!   this is stronger than FUA, never weaker. FUA on a read is ignored.
//! - With no sectors (`FWS [jbd2…]`, `FN`) the line is one flush.
//! - `N` without `F` (no data, no flush) is skipped and counted
//!   ([`super::ReadStats::no_data_skipped`]); a read/write/discard of zero
//!   sectors without a flush is skipped as zero-length.
//! - A SCSI pass-through event (`bytes (cdb) [process]`) is skipped.
//!
//! Times are seconds with 9 decimals, read exactly, and made relative to the
//! first request taken. They must not go back (a line error). The device is
//! `major << 20 | minor`, the kernel's `dev_t` that blktrace records (see
//! [`device_number`]); tracing a stack (dm, md, partitions) gives events for
//! every level, each with its device, which [`super::AddressMap`] can select.

use super::fields::{check_range, parse_decimal_ns, parse_u32, parse_u64, sectors_to_bytes};
use super::reader::{Clock, LineOutput, Parsed};
use super::{BlockRequest, ReqKind};

/// Bits of the minor number in the kernel's `dev_t` (blktrace's `MINORBITS`).
pub const MINOR_BITS: u32 = 20;
const MAJOR_MAX: u32 = (1 << (32 - MINOR_BITS)) - 1;
const MINOR_MAX: u32 = (1 << MINOR_BITS) - 1;

/// The device number of `major,minor` as [`BlockRequest::device`] holds it
/// (the kernel's `MKDEV`), or `None` past 12-bit majors / 20-bit minors.
pub fn device_number(major: u32, minor: u32) -> Option<u32> {
    (major <= MAJOR_MAX && minor <= MINOR_MAX).then_some((major << MINOR_BITS) | minor)
}

/// The `(major, minor)` of a device number made by [`device_number`].
pub fn major_minor(device: u32) -> (u32, u32) {
    (device >> MINOR_BITS, device & MINOR_MAX)
}

/// Which blkparse events are the requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Events {
    /// `Q`: bios as submitted (before merging).
    #[default]
    Queue,
    /// `D`: requests issued to the driver (after merging and splitting).
    Issue,
}

impl Events {
    fn action(self) -> &'static str {
        match self {
            Events::Queue => "Q",
            Events::Issue => "D",
        }
    }
}

/// What an RWBS field asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rwbs {
    preflush: bool,
    /// `None` for `N` (no data).
    op: Option<ReqKind>,
    fua: bool,
}

fn parse_rwbs(field: &str) -> Result<Rwbs, String> {
    let bad = || format!("RWBS `{field}` is not [F]{{D|W|R|N}}[F][A][S][M]");
    let mut chars = field.chars().peekable();
    let preflush = chars.next_if_eq(&'F').is_some();
    let op = match chars.next() {
        Some('D') => Some(ReqKind::Trim),
        Some('W') => Some(ReqKind::Write),
        Some('R') => Some(ReqKind::Read),
        Some('N') => None,
        _ => return Err(bad()),
    };
    if op == Some(ReqKind::Trim) {
        chars.next_if_eq(&'E');
    }
    let mut fua = false;
    for expected in ['F', 'A', 'S', 'M'] {
        if chars.next_if_eq(&expected).is_some() && expected == 'F' {
            fua = true;
        }
    }
    if chars.next().is_some() {
        return Err(bad());
    }
    Ok(Rwbs { preflush, op, fua })
}

/// `major,minor` if `field` has that form.
fn major_minor_field(field: &str) -> Option<(&str, &str)> {
    let (major, minor) = field.split_once(',')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(major) && digits(minor)).then_some((major, minor))
}

pub(crate) struct Parser {
    events: Events,
    clock: Clock,
}

impl Parser {
    pub(crate) fn new(events: Events) -> Self {
        Self {
            events,
            clock: Clock::new(true, 1, "ns"),
        }
    }

    pub(crate) fn parse_line(&mut self, line: u64, text: &str, out: &mut LineOutput<'_>) -> Result<Parsed, String> {
        let mut fields = text.split_ascii_whitespace();
        let Some((major, minor)) = fields.next().and_then(major_minor_field) else {
            return Ok(Parsed::Skipped); // not an event line: blank, or the summary block
        };
        let mut header = [""; 6];
        for (i, slot) in header.iter_mut().enumerate() {
            *slot = fields.next().ok_or_else(|| {
                format!(
                    "an event line has at least 7 fields (device cpu sequence time pid action RWBS), found {}",
                    i + 1
                )
            })?;
        }
        let [cpu, sequence, time, pid, action, rwbs_field] = header;
        let major = parse_u32(major, "major device number")?;
        let minor = parse_u32(minor, "minor device number")?;
        let device = device_number(major, minor).ok_or_else(|| format!("device {major},{minor} is past 12-bit majors or 20-bit minors"))?;
        parse_u32(cpu, "cpu")?;
        parse_u64(sequence, "sequence number")?;
        let time_ns = parse_decimal_ns(time, 9, "time (s)")?;
        parse_u32(pid, "pid")?;
        if action != self.events.action() {
            return Ok(Parsed::Skipped);
        }
        let rwbs = parse_rwbs(rwbs_field)?;
        let flushes = rwbs.preflush || (rwbs.fua && rwbs.op == Some(ReqKind::Write));
        if rwbs.op.is_none() && !flushes {
            return Ok(Parsed::NoData);
        }

        // The range: `sector + sectors`, or nothing (`[process]`, `(elapsed)`).
        let (offset_bytes, len_bytes) = match fields.next() {
            None => (0, 0),
            Some(f) if f.starts_with('[') || f.starts_with('(') => (0, 0),
            Some(sector) => {
                let next = fields.next();
                if next.is_some_and(|n| n.starts_with('(')) {
                    return Ok(Parsed::Skipped); // SCSI pass-through: `bytes (cdb) [process]`
                }
                if next != Some("+") {
                    return Err(format!(
                        "expected `sector + sectors` after RWBS `{rwbs_field}`, found `{sector}` without `+`"
                    ));
                }
                let sector = parse_u64(sector, "sector")?;
                let sectors = parse_u64(fields.next().unwrap_or(""), "sector count")?;
                let offset = sectors_to_bytes(sector, "sector")?;
                let len = sectors_to_bytes(sectors, "sector count")?;
                check_range(offset, len)?;
                (offset, len)
            }
        };
        let data = rwbs.op.filter(|_| len_bytes > 0);
        if data.is_none() && !flushes {
            return Ok(Parsed::ZeroLength);
        }

        let arrival_ns = self.clock.arrival(time_ns, line)?;
        let flush = BlockRequest {
            arrival_ns,
            device,
            kind: ReqKind::Flush,
            offset_bytes: 0,
            len_bytes: 0,
        };
        match data {
            Some(kind) => {
                if rwbs.preflush {
                    out.push(flush);
                }
                out.push(BlockRequest {
                    arrival_ns,
                    device,
                    kind,
                    offset_bytes,
                    len_bytes,
                });
                if rwbs.fua && kind == ReqKind::Write {
                    out.push(flush);
                }
            }
            None => out.push(flush),
        }
        Ok(Parsed::Requests)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{read_requests, read_requests_with, BlockRequest, ParseOptions, ReqKind, TraceError, TraceFormat};
    use super::*;

    fn parse(text: &str) -> Vec<Result<BlockRequest, TraceError>> {
        read_requests(TraceFormat::Blkparse, text.as_bytes()).collect()
    }

    fn req(arrival_ns: u64, kind: ReqKind, offset_bytes: u64, len_bytes: u64) -> BlockRequest {
        BlockRequest {
            arrival_ns,
            device: device_number(8, 0).unwrap(),
            kind,
            offset_bytes,
            len_bytes,
        }
    }

    #[test]
    fn rwbs_fields() {
        let r = |preflush, op, fua| Ok(Rwbs { preflush, op, fua });
        assert_eq!(parse_rwbs("W"), r(false, Some(ReqKind::Write), false));
        assert_eq!(parse_rwbs("WS"), r(false, Some(ReqKind::Write), false));
        assert_eq!(parse_rwbs("FWS"), r(true, Some(ReqKind::Write), false));
        assert_eq!(parse_rwbs("WFS"), r(false, Some(ReqKind::Write), true));
        assert_eq!(parse_rwbs("FWFSM"), r(true, Some(ReqKind::Write), true));
        assert_eq!(parse_rwbs("RA"), r(false, Some(ReqKind::Read), false));
        assert_eq!(parse_rwbs("RM"), r(false, Some(ReqKind::Read), false));
        assert_eq!(parse_rwbs("D"), r(false, Some(ReqKind::Trim), false));
        assert_eq!(parse_rwbs("DE"), r(false, Some(ReqKind::Trim), false));
        assert_eq!(parse_rwbs("FN"), r(true, None, false));
        assert_eq!(parse_rwbs("N"), r(false, None, false));
        for bad in ["", "F", "X", "WW", "SW", "WSF", "RE"] {
            assert!(parse_rwbs(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn device_numbers() {
        assert_eq!(device_number(8, 0), Some(8 << 20));
        assert_eq!(device_number(259, 3), Some((259 << 20) | 3));
        assert_eq!(major_minor(device_number(259, 3).unwrap()), (259, 3));
        assert_eq!(device_number(4096, 0), None);
        assert_eq!(device_number(0, 1 << 20), None);
    }

    #[test]
    fn queue_events_with_flushes() {
        let text = "\
  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kworker/u8:2]
  8,0    3        2     0.000001000   697  G   W 223490 + 8 [kworker/u8:2]
  8,0    3        3     0.000002000   697  D   W 223490 + 8 [kworker/u8:2]
  8,0    0        4     0.000412000   215  Q FWS [jbd2/sda1-8]
  8,0    0        5     0.000500000   215  Q FWFS 1000 + 16 [jbd2/sda1-8]
  8,0    1        6     0.001000000   300  Q  RA 0 + 256 [Web Content]
  8,0    1        7     0.002000000   301  Q   D 4096 + 2048 [fstrim]
  8,0    1        8     0.002000000   301  Q   N [kworker]
  8,0    1        9     0.003000000     0  m   N cfq workload slice:300
  8,0    1       10     0.004000000   302  Q  WS 8 + 0 [x]
";
        let mut reader = read_requests(TraceFormat::Blkparse, text.as_bytes());
        let got: Vec<_> = reader.by_ref().collect();
        assert_eq!(
            got,
            vec![
                Ok(req(0, ReqKind::Write, 223_490 * 512, 4096)),
                Ok(req(412_000, ReqKind::Flush, 0, 0)),
                Ok(req(500_000, ReqKind::Flush, 0, 0)),
                Ok(req(500_000, ReqKind::Write, 1000 * 512, 16 * 512)),
                Ok(req(500_000, ReqKind::Flush, 0, 0)),
                Ok(req(1_000_000, ReqKind::Read, 0, 256 * 512)),
                Ok(req(2_000_000, ReqKind::Trim, 4096 * 512, 2048 * 512)),
            ]
        );
        let stats = reader.stats();
        assert_eq!(
            (stats.lines, stats.requests, stats.no_data_skipped, stats.zero_length_skipped),
            (10, 7, 1, 1)
        );
        assert_eq!(stats.lines_skipped, 3, "G, D and m events");
    }

    #[test]
    fn issue_events_on_request() {
        let text = "\
  8,0    3        1     1.000000000   697  Q   W 100 + 8 [a]
  8,0    3        2     1.000000000   697  Q   W 108 + 8 [a]
  8,0    3        3     1.500000000   697  D   W 100 + 16 [a]
";
        let options = ParseOptions {
            blkparse_events: Events::Issue,
        };
        let got: Vec<_> = read_requests_with(TraceFormat::Blkparse, text.as_bytes(), options).collect();
        assert_eq!(
            got,
            vec![Ok(req(0, ReqKind::Write, 100 * 512, 16 * 512))],
            "relative to the first D event"
        );
    }

    #[test]
    fn errors_name_their_line() {
        let text = "\
  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [a]
  8,0    3        2     0.000000000   697  Q
  8,0    3        3     0.000000000   697  Q   X 1 + 8 [a]
  8,0    3        4     0.00000000x   697  Q   W 1 + 8 [a]
  8,0    3        5     0.000000000   697  Q   W 1 8 [a]
  8,0    3        6     0.000000000   697  Q   W 1 + [a]
8192,0   3        7     0.000000000   697  Q   W 1 + 8 [a]
  8,0    3        8     0.000000000   697  Q   W 36028797018963968 + 8 [a]
  8,0    3        9     0.000000000   abc  Q   W 1 + 8 [a]
  8,0    3       10     1.000000000   697  Q   W 1 + 8 [a]
  8,0    3       11     0.500000000   697  Q   W 1 + 8 [a]
";
        let e: Vec<TraceError> = parse(text).into_iter().filter_map(Result::err).collect();
        assert_eq!(e.iter().map(|e| e.line).collect::<Vec<_>>(), vec![2, 3, 4, 5, 6, 7, 8, 9, 11]);
        assert!(e[0].message.contains("found 6"), "{}", e[0]);
        assert!(e[1].message.contains("RWBS `X`"), "{}", e[1]);
        assert!(e[2].message.contains("time (s)"), "{}", e[2]);
        assert!(e[3].message.contains("without `+`"), "{}", e[3]);
        assert!(e[4].message.contains("sector count `[a]`"), "{}", e[4]);
        assert!(e[5].message.contains("8192,0"), "{}", e[5]);
        assert!(e[6].message.contains("past 2^64"), "{}", e[6]);
        assert!(e[7].message.contains("pid `abc`"), "{}", e[7]);
        assert!(
            e[8].message.contains("earlier than the previous request's 1000000000 ns (line 10)"),
            "{}",
            e[8]
        );
    }

    #[test]
    fn summary_and_passthrough_are_skipped() {
        let text = "\
  8,0    0        1     0.000000000   10  Q   R 8192 (12 00 ..) [sg_inq]
  8,0    0        2     0.000000000   10  Q   R 64 + 8 [dd]
CPU0 (8,0):
 Reads Queued:           1,        4KiB\t Writes Queued:           0,        0KiB
Total (8,0):

Throughput (R/W): 4KiB/s / 0KiB/s
Events (8,0): 2 entries
Skips: 0 forward (0 -   0.0%)
";
        assert_eq!(parse(text), vec![Ok(req(0, ReqKind::Read, 64 * 512, 4096))]);
    }
}
