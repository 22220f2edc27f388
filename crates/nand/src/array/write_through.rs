//! The image file behind an array: when it reaches the host's disk
//! ([`ImageSync`]), and the write-through of each page and block an
//! operation changes.

use super::{Data, Nand};
use crate::error::{ImageError, NandError};
use crate::geometry::{BlockId, Ppn};
use crate::image::ImageSync;

impl Nand {
    /// Flushes the image file to stable storage (no-op for RAM), whatever the
    /// [`ImageSync`] mode: the FTL calls it at a clean close.
    pub fn sync_image(&self) -> Result<(), NandError> {
        if let Some(img) = &self.image {
            img.sync()?;
        }
        Ok(())
    }

    /// Chooses when the image file reaches the host's disk (no-op for RAM).
    pub fn set_image_sync(&mut self, mode: ImageSync) {
        if let Some(img) = &mut self.image {
            img.set_sync(mode);
        }
    }

    /// The image's sync mode; `None` without an image.
    pub fn image_sync(&self) -> Option<ImageSync> {
        self.image.as_ref().map(|img| img.sync_mode())
    }

    /// A device flush or commit is durable from here on: in [`ImageSync::Flush`]
    /// mode the image is synced to the host's disk; otherwise nothing happens.
    /// The FTL calls this when its `flush` and `commit` complete.
    pub fn flush_image(&self) -> Result<(), NandError> {
        if let Some(img) = &self.image {
            img.flush_point()?;
        }
        Ok(())
    }

    /// Syncs of the image file so far (0 without an image).
    pub fn image_syncs(&self) -> u64 {
        self.image.as_ref().map_or(0, |img| img.syncs())
    }

    /// After a program or erase is written through: in [`ImageSync::Always`]
    /// mode it is synced before the operation returns.
    pub(super) fn image_op_done(&self) -> Result<(), ImageError> {
        match &self.image {
            Some(img) => img.op_done(),
            None => Ok(()),
        }
    }

    /// Writes page `ppn` as it now is to the image file, if there is one.
    /// Every program and erase calls this; without an image it is one
    /// inlined test.
    #[inline(always)]
    pub(super) fn write_through_page(&mut self, ppn: Ppn) -> Result<(), ImageError> {
        if self.image.is_none() {
            return Ok(());
        }
        self.write_page_to_image(ppn)
    }

    #[inline(never)]
    fn write_page_to_image(&mut self, ppn: Ppn) -> Result<(), ImageError> {
        let g = self.cfg.geometry;
        let (os, ps) = (g.oob_size as usize, g.page_size as usize);
        let mut oob = vec![0u8; os];
        self.spare.read(ppn, &mut oob);
        let programs = self.programs.get(ppn);
        let erased;
        let data = match &self.data {
            Data::Full(_) if programs == 0 => {
                erased = vec![0xFFu8; ps];
                &erased[..]
            }
            Data::Full(d) => match d.page(ppn) {
                Some(bytes) => bytes,
                None => {
                    erased = vec![0u8; ps];
                    &erased[..]
                }
            },
            Data::Meta(_) => unreachable!("images always store full data"),
        };
        self.image.as_mut().expect("checked").write_page(ppn, programs, &oob, data)
    }

    pub(super) fn write_through_block(&mut self, block: BlockId) -> Result<(), ImageError> {
        if self.image.is_none() {
            return Ok(());
        }
        let g = self.cfg.geometry;
        let (ec, bad) = (self.erase_counts[block as usize], self.bad[block as usize]);
        self.image.as_mut().expect("checked").write_block(block, ec, bad)?;
        let first = g.ppn(block, 0);
        for ppn in first..first + g.pages_per_block {
            self.write_through_page(ppn)?;
        }
        Ok(())
    }
}
