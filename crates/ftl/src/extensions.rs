//! Device calls beyond the block and X-FTL-style transactional interface,
//! as extension traits a protocol offers and the host discovers through
//! [`crate::Device`]'s `*_calls` methods. A protocol that does not offer one
//! answers `None`, and [`require`] turns that into a typed error the host
//! reports (`DeviceError::Unsupported`), never a silent fallback.
//!
//! - [`StaticTx`]: Möbius's static transactions (`SWRITE(uuid, p1..pm)`,
//!   every page known when it starts) and its serializable read `SREAD`.
//! - [`DynamicTx`]: Möbius's dynamic transaction (`DWRITE(p, HEAD|BODY|REAR)`,
//!   at most one at a time).
//! - [`TxEnd`]: NoLgn's end-flagged write: the host names a transaction's
//!   last page as it writes it, so the commit that follows programs nothing.
//! - [`Remap`]: SW-WAL's (NoLgn's baseline) `remap`: a logical page takes the
//!   physical page another one maps, instead of a copy.
//! - [`RecordTx`]: Flag Commit's record-level pending records (§4.2): a page
//!   written holding the pending records of several open transactions,
//!   read back as its versions with each record's status.
//!
//! Every call returns its latency on the device clock, as the base calls do.
//!
//! The host issues them as values ([`Call`]) through one method,
//! [`crate::Device::call`], and asks [`crate::Device::offers`] which ones the
//! device has: a device wrapper (the trace recorder, the SQLite crash
//! probe) forwards those two methods and passes every extension call on,
//! whatever calls a later protocol adds. The `*_calls` accessors are the
//! protocol's side: where `call` finds the protocol's implementation.

use crate::device::{Lpn, Tid};
use crate::error::{DeviceError, Result};
use crate::op::OpKind;

/// When a static transaction's `swrite` returns (Möbius §IV-B).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwriteAck {
    /// S-SWRITE: once every page is on flash (the transaction is durable).
    AllPages,
    /// A-SWRITE: once the transaction's record (the atom inode) is on flash;
    /// recovery may still abort it if a page did not make it.
    Record,
}

/// Static transactions: the host names every page up front.
pub trait StaticTx {
    /// Writes `pages` (logical page, its data) as one transaction `tid`.
    fn swrite(&mut self, tid: Tid, pages: &[(Lpn, &[u8])], ack: SwriteAck) -> Result<u64>;
    /// Reads `lpn` once every static transaction issued before it is on
    /// flash (Möbius §III-B: "after all the static transactions are
    /// committed"; serializable), where a plain read returns the last
    /// committed copy at once.
    fn sread(&mut self, lpn: Lpn, buf: &mut [u8]) -> Result<u64>;
}

/// Where a page sits in a dynamic transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DynamicPos {
    Head,
    Body,
    Rear,
}

/// The one dynamic transaction: pages sent one by one, the first marked
/// `Head`, the last `Rear` (its commit).
pub trait DynamicTx {
    fn dwrite(&mut self, lpn: Lpn, data: &[u8], pos: DynamicPos) -> Result<u64>;
    /// Aborts the open dynamic transaction.
    fn dabort(&mut self) -> Result<u64>;
}

/// A transaction's last page, marked as such when written (NoLgn's end
/// flag, §3.2): the host knows which write is the last (SQLite's VFS holds
/// one dirty page back until the sync), so the device programs it with the
/// flag at once and `commit` programs nothing. After it the transaction
/// takes only `commit`: its end is on flash, and recovery commits it.
pub trait TxEnd {
    fn write_end(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64>;
}

/// Copy-free moves of data between logical pages.
pub trait Remap {
    /// Writes `lpn`, its spare area naming `target`: the logical page a later
    /// `remap` may move it onto (SW-WAL: a WAL frame's page names its
    /// database page), so the page reads, moves and recovers as `target`'s
    /// once remapped.
    fn write_remappable(&mut self, lpn: Lpn, data: &[u8], target: Lpn) -> Result<u64>;
    /// `to` maps the physical page `from` maps now; `from` is unmapped and
    /// `to`'s old page becomes garbage. `from` must have been written with
    /// `write_remappable` naming `to` (since the mount), else the call is
    /// refused and the host copies instead. Durable at the next flush, as a
    /// trim.
    fn remap(&mut self, from: Lpn, to: Lpn) -> Result<u64>;
}

/// What became of a pending record's transaction, as a read reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryStatus {
    /// Committed: the record is the page's value.
    Committed,
    /// Its transaction (the host's id) is open: the record is its own write.
    Open(Tid),
    /// Aborted (or found not committed by a mount and settled so): the
    /// record's value is the one underneath, in an older version.
    Aborted,
    /// Found not committed by the last mount and not yet settled: the host
    /// may still commit it ([`RecordTx::commit_in_doubt`]); until then it
    /// reads as not committed. The number is the device's XID.
    InDoubt(u32),
}

impl EntryStatus {
    /// Whether the record is the page's committed value.
    pub fn committed(self) -> bool {
        self == EntryStatus::Committed
    }
}

/// One version of a logical page, as [`RecordTx::read_versions`] returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordVersion {
    /// The device's write stamp: a newer version has a larger one.
    pub version: u32,
    /// The page as written: the host's own layout names which record each
    /// entry is (the device keeps no record ids).
    pub data: Vec<u8>,
    /// The pending records' transactions, in the order written.
    pub entries: Vec<EntryStatus>,
}

impl RecordVersion {
    /// Every pending record is committed: no older version is needed to
    /// read this one.
    pub fn self_sufficient(&self) -> bool {
        self.entries.iter().all(|e| e.committed())
    }
}

/// Record-level pending records (Flag Commit §4.2, Fig. 10): a page is
/// written with the pending records of up to `max_c` open transactions;
/// each transaction's commit sets its own record's flag; a page's committed
/// records may lie in several versions, which a read returns.
pub trait RecordTx {
    /// Writes a new version of `lpn`: `data` holds the whole page as the host
    /// has it; `pending` names the open transactions (the host's ids, each
    /// begun, each at most once) whose records in it are pending, in the
    /// order the host's layout lists them. The other records of the page
    /// are committed content. Refused beyond the device's `max_c`.
    fn write_records(&mut self, lpn: Lpn, data: &[u8], pending: &[Tid]) -> Result<u64>;
    /// [`RecordTx::write_records`] of a *self-contained* version: the
    /// host's layout holds each pending record's committed value beneath
    /// it, so a reader needs no older version (a read stops at it, and the
    /// older versions are garbage once it is written).
    fn write_contained(&mut self, lpn: Lpn, data: &[u8], pending: &[Tid]) -> Result<u64>;
    /// The versions of `lpn` a reader needs, newest first, down to the
    /// newest whose pending records are all committed (that one included);
    /// none for a page never written. Each costs a page read.
    fn read_versions(&mut self, lpn: Lpn, out: &mut Vec<RecordVersion>) -> Result<u64>;
    /// The device's XID of open transaction `tid`: what a host's commit log
    /// record names so that its restart can commit it in doubt.
    fn xid_of(&self, tid: Tid) -> Result<u32>;
    /// The transactions the last mount found not committed whose records
    /// are on flash, while not settled (the first write or begin after the
    /// mount settles them: aborted).
    fn in_doubt(&self) -> Vec<u32>;
    /// Commits in-doubt transaction `xid` (a host's restart found its
    /// commit record in its log): its flags are programmed, and its records
    /// read committed. Refused for an XID not in doubt.
    fn commit_in_doubt(&mut self, xid: u32) -> Result<u64>;
}

/// The extension calls by name, as a protocol's registry entry declares them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Extension {
    StaticTx,
    DynamicTx,
    TxEnd,
    Remap,
    RecordTx,
}

impl Extension {
    pub const ALL: [Extension; 5] = [
        Extension::StaticTx,
        Extension::DynamicTx,
        Extension::TxEnd,
        Extension::Remap,
        Extension::RecordTx,
    ];

    /// The calls, as an error or a listing names them.
    pub fn calls(self) -> &'static str {
        match self {
            Extension::StaticTx => "static transactions (swrite, sread)",
            Extension::DynamicTx => "dynamic transactions (dwrite)",
            Extension::TxEnd => "end-flagged transactional writes (write_end)",
            Extension::Remap => "remap",
            Extension::RecordTx => "record-level pending records (write_records, read_versions, commit_in_doubt)",
        }
    }
}

/// One extension call with its operands, as the host issues it
/// ([`crate::Device::call`]).
pub enum Call<'a> {
    /// `StaticTx::swrite`.
    Swrite {
        tid: Tid,
        pages: &'a [(Lpn, &'a [u8])],
        ack: SwriteAck,
    },
    /// `StaticTx::sread`.
    Sread { lpn: Lpn, buf: &'a mut [u8] },
    /// `DynamicTx::dwrite`.
    Dwrite { lpn: Lpn, data: &'a [u8], pos: DynamicPos },
    /// `DynamicTx::dabort`.
    Dabort,
    /// `TxEnd::write_end`.
    WriteEnd { tid: Tid, lpn: Lpn, data: &'a [u8] },
    /// `Remap::write_remappable`.
    WriteRemappable { lpn: Lpn, data: &'a [u8], target: Lpn },
    /// `Remap::remap`.
    Remap { from: Lpn, to: Lpn },
    /// `RecordTx::write_records`.
    WriteRecords { lpn: Lpn, data: &'a [u8], pending: &'a [Tid] },
    /// `RecordTx::write_contained`.
    WriteContained { lpn: Lpn, data: &'a [u8], pending: &'a [Tid] },
    /// `RecordTx::read_versions`.
    ReadVersions { lpn: Lpn, out: &'a mut Vec<RecordVersion> },
    /// `RecordTx::commit_in_doubt`.
    CommitInDoubt { xid: u32 },
    /// `RecordTx::xid_of`, answered in `out` (the call takes no device time).
    XidOf { tid: Tid, out: &'a mut u32 },
    /// `RecordTx::in_doubt`, answered in `out` (no device time).
    InDoubt { out: &'a mut Vec<u32> },
}

impl Call<'_> {
    /// The extension the call belongs to.
    pub fn extension(&self) -> Extension {
        match self {
            Call::Swrite { .. } | Call::Sread { .. } => Extension::StaticTx,
            Call::Dwrite { .. } | Call::Dabort => Extension::DynamicTx,
            Call::WriteEnd { .. } => Extension::TxEnd,
            Call::WriteRemappable { .. } | Call::Remap { .. } => Extension::Remap,
            Call::WriteRecords { .. }
            | Call::WriteContained { .. }
            | Call::ReadVersions { .. }
            | Call::CommitInDoubt { .. }
            | Call::XidOf { .. }
            | Call::InDoubt { .. } => Extension::RecordTx,
        }
    }

    /// The call's name, as errors and reports give it.
    pub fn name(&self) -> &'static str {
        match self {
            Call::Swrite { .. } => "swrite",
            Call::Sread { .. } => "sread",
            Call::Dwrite { .. } => "dwrite",
            Call::Dabort => "dabort",
            Call::WriteEnd { .. } => "write_end",
            Call::WriteRemappable { .. } => "write_remappable",
            Call::Remap { .. } => "remap",
            Call::WriteRecords { .. } => "write_records",
            Call::WriteContained { .. } => "write_contained",
            Call::ReadVersions { .. } => "read_versions",
            Call::CommitInDoubt { .. } => "commit_in_doubt",
            Call::XidOf { .. } => "xid_of",
            Call::InDoubt { .. } => "in_doubt",
        }
    }

    /// The base operation the call acts as, and whether it acts inside a
    /// transaction: what a wrapper that attributes device work to calls
    /// records (the SQLite crash probe's spans). An end-flagged write, a
    /// static or dynamic transaction's write, is a transaction's write.
    pub fn acts_as(&self) -> (OpKind, bool) {
        match self {
            Call::WriteEnd { .. } | Call::Swrite { .. } | Call::Dwrite { .. } | Call::WriteRecords { .. } | Call::WriteContained { .. } => {
                (OpKind::Write, true)
            }
            Call::Sread { .. } | Call::ReadVersions { .. } | Call::XidOf { .. } | Call::InDoubt { .. } => (OpKind::Read, false),
            Call::CommitInDoubt { .. } => (OpKind::Commit, true),
            Call::Dabort => (OpKind::Abort, true),
            Call::WriteRemappable { .. } => (OpKind::WriteRemappable, false),
            Call::Remap { .. } => (OpKind::Remap, false),
        }
    }

    /// The transaction the call names, if any (a dynamic transaction has no id).
    pub fn tid(&self) -> Option<Tid> {
        match self {
            Call::Swrite { tid, .. } | Call::WriteEnd { tid, .. } => Some(*tid),
            _ => None,
        }
    }

    /// The call as values ([`crate::Op`]), as a trace records it: an swrite
    /// is its staged pages then the swrite; a dynamic transaction's calls,
    /// which name none, name `dynamic_tid`. None: the trace format has no
    /// words for the call (record-level calls), and a recorder refuses it.
    pub fn ops(&self, dynamic_tid: Tid) -> Option<Vec<crate::Op>> {
        use crate::Op;
        Some(match *self {
            Call::Swrite { tid, pages, ack } => pages
                .iter()
                .map(|&(l, _)| Op::Stage(tid, l))
                .chain([Op::Swrite(tid, ack)])
                .collect(),
            Call::Sread { lpn, .. } => vec![Op::Sread(lpn)],
            Call::Dwrite { lpn, pos, .. } => vec![Op::Dwrite(dynamic_tid, lpn, pos)],
            Call::Dabort => vec![Op::Dabort(dynamic_tid)],
            Call::WriteEnd { tid, lpn, .. } => vec![Op::WriteEnd(tid, lpn)],
            Call::WriteRemappable { lpn, target, .. } => vec![Op::WriteRemappable(lpn, target)],
            Call::Remap { from, to } => vec![Op::Remap(from, to)],
            Call::WriteRecords { .. }
            | Call::WriteContained { .. }
            | Call::ReadVersions { .. }
            | Call::CommitInDoubt { .. }
            | Call::XidOf { .. }
            | Call::InDoubt { .. } => return None,
        })
    }

    /// Issues the call on the protocol's implementation of its extension, or
    /// refuses it with the typed error that names the calls (the default
    /// [`crate::Device::call`]).
    pub fn dispatch<D: crate::Device + ?Sized>(self, dev: &mut D) -> Result<u64> {
        let protocol = dev.info().protocol;
        let ext = self.extension();
        match self {
            Call::Swrite { tid, pages, ack } => require(dev.static_tx_calls(), protocol, ext)?.swrite(tid, pages, ack),
            Call::Sread { lpn, buf } => require(dev.static_tx_calls(), protocol, ext)?.sread(lpn, buf),
            Call::Dwrite { lpn, data, pos } => require(dev.dynamic_tx_calls(), protocol, ext)?.dwrite(lpn, data, pos),
            Call::Dabort => require(dev.dynamic_tx_calls(), protocol, ext)?.dabort(),
            Call::WriteEnd { tid, lpn, data } => require(dev.tx_end_calls(), protocol, ext)?.write_end(tid, lpn, data),
            Call::WriteRemappable { lpn, data, target } => require(dev.remap_calls(), protocol, ext)?.write_remappable(lpn, data, target),
            Call::Remap { from, to } => require(dev.remap_calls(), protocol, ext)?.remap(from, to),
            Call::WriteRecords { lpn, data, pending } => require(dev.record_tx_calls(), protocol, ext)?.write_records(lpn, data, pending),
            Call::WriteContained { lpn, data, pending } => {
                require(dev.record_tx_calls(), protocol, ext)?.write_contained(lpn, data, pending)
            }
            Call::ReadVersions { lpn, out } => require(dev.record_tx_calls(), protocol, ext)?.read_versions(lpn, out),
            Call::CommitInDoubt { xid } => require(dev.record_tx_calls(), protocol, ext)?.commit_in_doubt(xid),
            Call::XidOf { tid, out } => {
                *out = require(dev.record_tx_calls(), protocol, ext)?.xid_of(tid)?;
                Ok(0)
            }
            Call::InDoubt { out } => {
                *out = require(dev.record_tx_calls(), protocol, ext)?.in_doubt();
                Ok(0)
            }
        }
    }
}

/// `calls`, or the typed error that says protocol `protocol` does not offer them.
pub fn require<'a, T: ?Sized>(calls: Option<&'a mut T>, protocol: &'static str, ext: Extension) -> Result<&'a mut T> {
    calls.ok_or(DeviceError::Unsupported {
        protocol,
        what: ext.calls(),
    })
}
