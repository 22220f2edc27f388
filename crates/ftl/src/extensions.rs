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

/// The extension calls by name, as a protocol's registry entry declares them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Extension {
    StaticTx,
    DynamicTx,
    TxEnd,
    Remap,
}

impl Extension {
    pub const ALL: [Extension; 4] = [Extension::StaticTx, Extension::DynamicTx, Extension::TxEnd, Extension::Remap];

    /// The calls, as an error or a listing names them.
    pub fn calls(self) -> &'static str {
        match self {
            Extension::StaticTx => "static transactions (swrite, sread)",
            Extension::DynamicTx => "dynamic transactions (dwrite)",
            Extension::TxEnd => "end-flagged transactional writes (write_end)",
            Extension::Remap => "remap",
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
}

impl Call<'_> {
    /// The extension the call belongs to.
    pub fn extension(&self) -> Extension {
        match self {
            Call::Swrite { .. } | Call::Sread { .. } => Extension::StaticTx,
            Call::Dwrite { .. } | Call::Dabort => Extension::DynamicTx,
            Call::WriteEnd { .. } => Extension::TxEnd,
            Call::WriteRemappable { .. } | Call::Remap { .. } => Extension::Remap,
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
        }
    }

    /// The base operation the call acts as, and whether it acts inside a
    /// transaction: what a wrapper that attributes device work to calls
    /// records (the SQLite crash probe's spans). An end-flagged write, a
    /// static or dynamic transaction's write, is a transaction's write.
    pub fn acts_as(&self) -> (OpKind, bool) {
        match self {
            Call::WriteEnd { .. } | Call::Swrite { .. } | Call::Dwrite { .. } => (OpKind::Write, true),
            Call::Sread { .. } => (OpKind::Read, false),
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
    /// which name none, name `dynamic_tid`.
    pub fn ops(&self, dynamic_tid: Tid) -> Vec<crate::Op> {
        use crate::Op;
        match *self {
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
        }
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
