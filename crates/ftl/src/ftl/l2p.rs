//! Changes to the L2P: a logical page mapped to a physical page or unmapped,
//! and the calls protocols build on to map, remap and unmap pages.

use super::Ftl;
use crate::checkpoint::UNMAPPED;
use crate::device::Lpn;
use crate::error::{DeviceError, Result};
use crate::hooks::Hooks;
use crate::mapping::Mapping;
use crate::oob::{Oob, PageKind};
use txftl_nand::Ppn;

impl<H: Hooks> Ftl<H> {
    /// Points `lpn` at `ppn`, invalidating its previous page.
    pub(crate) fn map(&mut self, lpn: Lpn, ppn: Ppn) {
        // One-to-one: a physical page holds one logical page.
        assert!(
            !self.mapped.get(ppn) || self.l2p.get(lpn) == ppn,
            "mapping lpn {lpn} to page {ppn}, which another logical page maps"
        );
        self.unmap(lpn);
        self.l2p.set(lpn, ppn);
        self.tables.mark_lpn(lpn);
        self.mapped.set(ppn, true);
        self.blocks.valid_inc(self.geo.block_of(ppn));
    }

    pub(crate) fn unmap(&mut self, lpn: Lpn) {
        let old = self.l2p.get(lpn);
        if old != UNMAPPED {
            assert!(self.mapped.get(old), "lpn {lpn} maps page {old}, which is not marked mapped");
            self.mapped.set(old, false);
            self.blocks.valid_dec(self.geo.block_of(old));
            self.l2p.set(lpn, UNMAPPED);
            self.tables.mark_lpn(lpn);
        }
    }

    /// Points `lpn` at `ppn`, a data page of `lpn` programmed earlier (by
    /// `program_unmapped`): a protocol folding a committed page into the L2P.
    pub fn map_page(&mut self, lpn: Lpn, ppn: Ppn) -> Result<()> {
        self.check_lpn(lpn)?;
        if ppn >= self.geo.page_count() || self.mapped.get(ppn) {
            return Err(DeviceError::Corrupted(format!(
                "cannot map lpn {lpn} to page {ppn}: out of range or already mapped"
            )));
        }
        self.map(lpn, ppn);
        Ok(())
    }

    /// Does a data page with record `o` hold logical page `lpn`: its OOB names
    /// it, or the protocol's alias does (`Hooks::alias_lpn`)?
    pub(crate) fn holds(&self, o: &Oob, lpn: Lpn) -> bool {
        o.kind == PageKind::Data && (o.lpn == lpn || self.hooks.alias_lpn(o) == Some(lpn))
    }

    /// `to` takes the physical page `from` maps, without a copy; `from` is
    /// unmapped and `to`'s old page becomes garbage (SW-WAL's remap). The
    /// page's spare area still names `from`, so the protocol must name `to`
    /// as its alias (`Hooks::alias_lpn`) or reads of `to` are refused as
    /// corrupted. A page's OOB alone cannot say a remap happened: the
    /// protocol makes it durable, in a record its recovery reads (SW-WAL's
    /// remap record) or by a checkpoint (`Ftl::checkpoint`); the FTL's own
    /// checkpoints make it durable too, whenever they come.
    pub fn remap_page(&mut self, from: Lpn, to: Lpn) -> Result<()> {
        self.check_writable("remap")?;
        self.check_lpn(from)?;
        self.check_lpn(to)?;
        if !<H::Mapping as Mapping>::PERSISTED || <H::Mapping as Mapping>::CACHED {
            return Err(DeviceError::Unsupported {
                protocol: self.hooks.name(),
                what: "remap (it needs the whole mapping table in DRAM, persisted by checkpoints)",
            });
        }
        self.fetch_mapping(from)?;
        self.fetch_mapping(to)?;
        let ppn = self.l2p.get(from);
        if from == to || ppn == UNMAPPED {
            return Err(DeviceError::CallOrder(format!(
                "remap of logical page {from} onto {to}: {}",
                if from == to { "the same page" } else { "it maps no page" }
            )));
        }
        self.unmap(to);
        // One page, one owner: its mapped bit and its block's valid count stay.
        self.l2p.set(from, UNMAPPED);
        self.tables.mark_lpn(from);
        self.l2p.set(to, ppn);
        self.tables.mark_lpn(to);
        Ok(())
    }

    /// Takes `lpn` back to unmapped, its page becoming garbage (NoLgn's
    /// abort of a transaction that wrote a page no one had written before).
    /// Durable as a trim is: through the next checkpoint's L2P, or, after a
    /// power cut, through what the protocol's recovery decides.
    pub fn unmap_page(&mut self, lpn: Lpn) -> Result<()> {
        self.check_lpn(lpn)?;
        self.fetch_mapping(lpn)?;
        self.unmap(lpn);
        Ok(())
    }
}
