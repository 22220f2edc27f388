//! Public block traces, read as they are.
//!
//! Every format is parsed into a stream of [`BlockRequest`]s in bytes and
//! nanoseconds (whatever the format's own units), which the replay maps onto
//! the device's logical pages ([`PageSpan`], [`AddressMap`]). A line that
//! cannot be read is a [`TraceError`] naming the line.
//!
//! # Formats accepted
//!
//! [`read_requests`] takes a [`TraceFormat`] (by name: `mqsim`, `disksim`,
//! `msr`, `blkparse`) and any [`std::io::BufRead`], and streams: one line at a
//! time, at most [`LINE_BYTES_MAX`] bytes of it, so a trace of any size is read
//! in bounded memory. Each module's doc has the details.
//!
//! | name | a line | time | addresses | kinds |
//! |------|--------|------|-----------|-------|
//! | `mqsim` ([`mqsim`]) | `arrival_ns device start_sector size_sectors type` | integer ns, as given | 512-B sectors | type `0` write, `1` read (MQSim's `ASCIITraceWriteCode "0"` / `ASCIITraceReadCode "1"`) |
//! | `disksim` ([`mqsim`]) | `arrival_ms device start_block size_blocks flags` | decimal ms, as given | 512-B sectors | flags in hex, bit 0 set = read, clear = write (DiskSim's `READ 0x1`) |
//! | `msr` ([`msr`]) | `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime` | filetime (100 ns ticks), relative to the first request | bytes | `Read`, `Write` |
//! | `blkparse` ([`blkparse`]) | `8,0  3  1  0.000000000  697  Q  W 223490 + 8 [proc]` | seconds, relative to the first request | 512-B sectors | from RWBS: `R` read, `W` write, `D` trim; `F` adds a flush (before the request when first, after a write when after it) |
//!
//! blkparse's requests are its queue (`Q`) events, as submitted; its issue
//! (`D`) events, as the driver saw them after merging, with
//! [`ParseOptions::blkparse_events`]. Everything else it prints (other events,
//! the summary block at the end) is skipped.
//!
//! Rules common to every format:
//! - **Order.** Arrival times must never go back (equal is fine): a time
//!   earlier than the previous request's is a line error naming both lines.
//!   MQSim and DiskSim refuse unsorted traces the same way.
//! - **Zero-length** reads, writes and trims are skipped and counted
//!   ([`ReadStats::zero_length_skipped`]): the device has nothing to do, and
//!   one such line should not make a real trace unusable.
//! - **Lines that are not requests** (blank lines, a CSV header, blkparse's
//!   summary block and other events) are skipped and counted; a line that
//!   should be a request and cannot be read is an error, and reading goes on
//!   with the next line.
//! - **Arithmetic** on the trace's numbers is checked: a sector or range past
//!   2^64 bytes, or a time past 2^64 ns, is a line error, never a wrap.
//!
//! The device number is the trace's own (MSR's DiskNumber, MQSim's device
//! column, `major << 20 | minor` for blkparse). [`AddressMap`] decides which
//! devices are replayed (by default exactly one) and what happens past the
//! device's capacity (by default an error; or wrap). [`gen`] writes synthetic
//! traces in MQSim's format shaped like MQSim's `tpcc-small.trace`.

pub mod blkparse;
mod fields;
pub mod gen;
pub mod map;
pub mod mqsim;
pub mod msr;
mod reader;

use std::fmt;
use std::str::FromStr;

pub use fields::SECTOR_BYTES;
pub use map::{page_span, AddressMap, Devices, MapStats, MappedRequest, Overflow};
pub use reader::{read_requests, read_requests_with, Numbered, ParseOptions, ReadStats, TraceReader, LINE_BYTES_MAX};

use serde::Serialize;
use txftl_ftl::OpKind;

/// What a request asks of the device: the device calls a public block
/// trace has (no transactions), each one of the device's [`OpKind`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReqKind {
    Read,
    Write,
    /// Discard / trim of the range.
    Trim,
    /// Cache flush (no range).
    Flush,
}

impl ReqKind {
    /// The device call it is.
    pub fn op(self) -> OpKind {
        match self {
            ReqKind::Read => OpKind::Read,
            ReqKind::Write => OpKind::Write,
            ReqKind::Trim => OpKind::Trim,
            ReqKind::Flush => OpKind::Flush,
        }
    }
}

/// One request of a block trace, in the trace's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BlockRequest {
    /// Arrival (submission) time, ns from the trace's own origin.
    pub arrival_ns: u64,
    /// The device (disk number) the trace names, as given (0 where the format has none).
    pub device: u32,
    pub kind: ReqKind,
    /// First byte of the range on the device, and its length in bytes (0 for a flush).
    pub offset_bytes: u64,
    pub len_bytes: u64,
}

/// A line of a trace that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct TraceError {
    /// 1-based line number in the file.
    pub line: u64,
    pub message: String,
}

/// The logical pages a request covers, and which of its end pages it covers
/// only in part (a partial write is a read-modify-write of that page).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PageSpan {
    pub first_lpn: u64,
    pub pages: u64,
    /// The first (last) page is covered only in part.
    pub partial_head: bool,
    pub partial_tail: bool,
}

/// The trace formats [`read_requests`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceFormat {
    /// MQSim's ASCII trace (ns, type 0 = write, 1 = read).
    Mqsim,
    /// DiskSim's ASCII trace (ms, hex flags with bit 0 = read).
    Disksim,
    /// MSR Cambridge / SNIA IOTTA CSV.
    Msr,
    /// blkparse's default text output.
    Blkparse,
}

impl TraceFormat {
    pub const ALL: [TraceFormat; 4] = [TraceFormat::Mqsim, TraceFormat::Disksim, TraceFormat::Msr, TraceFormat::Blkparse];

    /// The format called `name` (as [`TraceFormat::name`] spells it; ASCII case ignored).
    pub fn parse(name: &str) -> Result<Self, UnknownFormat> {
        Self::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| UnknownFormat(name.to_string()))
    }

    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Mqsim => "mqsim",
            TraceFormat::Disksim => "disksim",
            TraceFormat::Msr => "msr",
            TraceFormat::Blkparse => "blkparse",
        }
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TraceFormat {
    type Err = UnknownFormat;

    fn from_str(name: &str) -> Result<Self, UnknownFormat> {
        Self::parse(name)
    }
}

/// A trace format name that is not one of [`TraceFormat::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown trace format `{0}` (known: mqsim, disksim, msr, blkparse)")]
pub struct UnknownFormat(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names() {
        for format in TraceFormat::ALL {
            assert_eq!(TraceFormat::parse(format.name()), Ok(format));
            assert_eq!(format.to_string().parse::<TraceFormat>(), Ok(format));
        }
        assert_eq!(TraceFormat::parse("MQSim"), Ok(TraceFormat::Mqsim));
        let err = TraceFormat::parse("spc").unwrap_err();
        assert_eq!(err.to_string(), "unknown trace format `spc` (known: mqsim, disksim, msr, blkparse)");
    }

    #[test]
    fn long_lines_are_errors_in_bounded_memory() {
        let mut text = String::from("1 0 0 8 0\n");
        text.push_str(&"9".repeat(LINE_BYTES_MAX + 1));
        text.push_str("\n2 0 0 8 1\n");
        let got: Vec<_> = read_requests(TraceFormat::Mqsim, text.as_bytes()).collect();
        assert_eq!(got.len(), 3);
        assert!(got[0].is_ok() && got[2].is_ok());
        let err = got[1].clone().unwrap_err();
        assert_eq!((err.line, err.message.as_str()), (2, "line is longer than 65536 bytes"));
    }

    #[test]
    fn read_errors_end_the_stream() {
        struct Failing;
        impl std::io::Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk on fire"))
            }
        }
        let mut reader = read_requests(TraceFormat::Msr, std::io::BufReader::new(Failing));
        let err = reader.next().unwrap().unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.message.contains("disk on fire"), "{err}");
        assert!(reader.next().is_none());
    }

    #[test]
    fn numbered_gives_lines() {
        let text = "\n0 0 0 8 0\n\n1 0 0 8 1\n";
        let got: Vec<_> = read_requests(TraceFormat::Mqsim, text.as_bytes())
            .numbered()
            .map(|r| r.unwrap().0)
            .collect();
        assert_eq!(got, vec![2, 4]);
    }
}
