//! Public block traces, read as they are.
//!
//! Every format is parsed into a stream of [`BlockRequest`]s in bytes and
//! nanoseconds (whatever the format's own units), which the replay maps onto
//! the device's logical pages ([`PageSpan`]). A line that cannot be read is a
//! [`TraceError`] naming the line.

use serde::Serialize;

/// What a request asks of the device.
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
