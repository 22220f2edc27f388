//! The host write path: a page programmed and mapped (or left unmapped for
//! a protocol to map at commit), and the housekeeping after host programs.

use super::{Ftl, Stream};
use crate::device::Lpn;
use crate::error::Result;
use crate::hooks::Hooks;
use crate::oob::{PageKind, SpareBytes, PROTOCOL_BYTES};
use txftl_nand::Ppn;

/// Whom a page programmed in the host stream counts for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writer {
    /// The host: `host_writes`.
    Host,
    /// The protocol's metadata (X-FTL's spill pages): `protocol_meta_writes`.
    ProtocolMeta,
    /// The protocol, which counts the page among its own counters only
    /// (Atomic-Write's abort pages).
    Protocol,
}

/// Static wear leveling looks at the erase-count spread after this many erases.
pub(super) const WEAR_CHECK_EVERY_ERASES: u32 = 8;

impl<H: Hooks> Ftl<H> {
    /// Programs a host page that the L2P does not point to yet (a transactional
    /// page: the protocol keeps it live through `GcHooks::extra_live` and maps it
    /// at commit). Returns the page and the write's latency.
    pub fn program_unmapped(&mut self, lpn: Lpn, data: &[u8], protocol: &[u8; PROTOCOL_BYTES]) -> Result<(Ppn, u64)> {
        self.program_unmapped_by(Writer::Host, lpn, data, protocol)
    }

    /// [`Ftl::program_unmapped`] of a page `writer` writes.
    pub fn program_unmapped_by(&mut self, writer: Writer, lpn: Lpn, data: &[u8], protocol: &[u8; PROTOCOL_BYTES]) -> Result<(Ppn, u64)> {
        let start = self.now_ns;
        let (ppn, _) = self.program_unmapped_deferred_by(writer, lpn, data, protocol)?;
        self.after_program()?;
        Ok((ppn, self.now_ns - start))
    }

    /// [`Ftl::program_unmapped`] without the housekeeping that follows a host
    /// program (interval checkpoints, wear leveling, retiring failed blocks):
    /// the caller finishes what the page belongs to, then calls
    /// [`Ftl::housekeeping`]. LightTx programs a commit page this way and maps
    /// the transaction's pages before any checkpoint: a checkpoint in between
    /// would record neither the commit (older than it) nor the mappings.
    pub fn program_unmapped_deferred(&mut self, lpn: Lpn, data: &[u8], protocol: &[u8; PROTOCOL_BYTES]) -> Result<(Ppn, u64)> {
        self.program_unmapped_deferred_by(Writer::Host, lpn, data, protocol)
    }

    /// [`Ftl::program_unmapped_deferred`] of a page `writer` writes: a
    /// protocol's own page in the data pool counts as no host write.
    pub fn program_unmapped_deferred_by(
        &mut self,
        writer: Writer,
        lpn: Lpn,
        data: &[u8],
        protocol: &[u8; PROTOCOL_BYTES],
    ) -> Result<(Ppn, u64)> {
        self.program_unmapped_flagged_by(writer, lpn, data, &SpareBytes::unflagged(*protocol))
    }

    /// [`Ftl::program_unmapped_deferred_by`] of a page whose flag bytes
    /// start with bits cleared (`bytes.flags`; Flag Commit's initial flags).
    pub fn program_unmapped_flagged_by(&mut self, writer: Writer, lpn: Lpn, data: &[u8], bytes: &SpareBytes) -> Result<(Ppn, u64)> {
        self.check_writable("write")?;
        self.check_lpn(lpn)?;
        self.check_data_len(data.len())?;
        self.answer_erase_requests()?;
        let start = self.now_ns;
        let (ppn, transferred) = self.program_stream(Stream::Host, PageKind::Data, lpn, data, bytes, self.now_ns)?;
        match writer {
            Writer::Host => self.counters.host_writes += 1,
            Writer::ProtocolMeta => self.counters.protocol_meta_writes += 1,
            Writer::Protocol => {}
        }
        self.now_ns = self.now_ns.max(transferred);
        Ok((ppn, self.now_ns - start))
    }

    /// The housekeeping deferred by [`Ftl::program_unmapped_deferred`].
    pub fn housekeeping(&mut self) -> Result<()> {
        self.after_program()
    }

    /// Host write of one page (plain, non-transactional).
    pub fn write_page(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.write_page_with(lpn, data, &[0; PROTOCOL_BYTES])
    }

    /// Host write with protocol bytes in the OOB (for protocols built on the framework).
    pub fn write_page_with(&mut self, lpn: Lpn, data: &[u8], protocol: &[u8; PROTOCOL_BYTES]) -> Result<u64> {
        self.write_page_flagged(lpn, data, &SpareBytes::unflagged(*protocol))
    }

    /// [`Ftl::write_page_with`] of a page whose flag bytes start with bits
    /// cleared (`bytes.flags`).
    pub fn write_page_flagged(&mut self, lpn: Lpn, data: &[u8], bytes: &SpareBytes) -> Result<u64> {
        self.check_writable("write")?;
        self.check_lpn(lpn)?;
        self.check_data_len(data.len())?;
        self.answer_erase_requests()?;
        let start = self.now_ns;
        self.fetch_mapping(lpn)?;
        let (ppn, transferred) = self.program_stream(Stream::Host, PageKind::Data, lpn, data, bytes, self.now_ns)?;
        self.map(lpn, ppn);
        self.counters.host_writes += 1;
        self.now_ns = self.now_ns.max(transferred);
        self.after_program()?;
        Ok(self.now_ns - start)
    }

    /// Housekeeping after host programs: interval checkpoints and static wear leveling.
    pub(crate) fn after_program(&mut self) -> Result<()> {
        if !self.retiring.is_empty() {
            self.retire_pending()?;
        }
        if self.programs_since_ckpt >= self.derived.checkpoint_every {
            self.checkpoint()?;
        }
        if self.erases_since_wl_check >= WEAR_CHECK_EVERY_ERASES {
            self.erases_since_wl_check = 0;
            self.wear_level()?;
        }
        Ok(())
    }
}
