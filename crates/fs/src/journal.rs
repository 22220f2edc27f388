//! The metadata journal of [`FsMode::Journaled`](crate::FsMode::Journaled)
//! (ext4's ordered mode): one journal transaction at a time, at a fixed area.
//!
//! On flash, at `journal_start` (little-endian):
//! ```text
//! descriptor page:  0 [u8; 8] magic "TXFTLFJ1"
//!                   8 u64     sequence number
//!                  16 u32     count n of metadata pages
//!                  20 u32     CRC-32 of the n page images, in order
//!                  24 n x u32 home page of each image
//! n image pages:   the metadata pages, byte for byte as they go in place
//!                   (inode, bitmap and extent overflow pages)
//! commit record:    0 [u8; 8] magic "TXFTLFC1"
//!                   8 u64     sequence number (the descriptor's)
//!                  16 u32     CRC-32 (the descriptor's)
//! ```
//!
//! The area holds `journal_pages - 2` images (sized at format, see
//! [`crate::layout`]); the file system commits early, between two steps of
//! its non-transactional operations, before a journal transaction would
//! outgrow it ([`Fs::make_room`]), and a transaction that would still
//! exceed it fails with [`FsError::JournalFull`] before anything is written.
//!
//! Replay after a crash is safe for overflow pages too: an overflow page in
//! the last committed journal transaction cannot have been reused since (a
//! page freed by a journal transaction stays allocated until that
//! transaction commits, and the next commit overwrites the journal first).

use crate::{Fs, FsError, Result};
use txftl_ftl::Lpn;

const JOURNAL_MAGIC: &[u8; 8] = b"TXFTLFJ1";
const COMMIT_MAGIC: &[u8; 8] = b"TXFTLFC1";

impl Fs {
    /// Ordered-mode journal commit of the non-transactional metadata changes:
    /// data first, then the metadata to the journal, a barrier, then in place.
    pub(crate) fn journal_commit(&mut self) -> Result<()> {
        let l = self.layout;
        let ps = self.page_size();
        let (homes, images): (Vec<Lpn>, Vec<Vec<u8>>) = self.pending_images(None).into_iter().unzip();
        if homes.len() > l.journal_images() as usize {
            return Err(FsError::JournalFull {
                pages: homes.len(),
                capacity: l.journal_images(),
            });
        }
        self.flush()?;
        self.journal_seq += 1;
        let mut crc = crc32fast::Hasher::new();
        for img in &images {
            crc.update(img);
        }
        let crc = crc.finalize();
        let mut desc = vec![0u8; ps];
        desc[0..8].copy_from_slice(JOURNAL_MAGIC);
        desc[8..16].copy_from_slice(&self.journal_seq.to_le_bytes());
        desc[16..20].copy_from_slice(&(homes.len() as u32).to_le_bytes());
        desc[20..24].copy_from_slice(&crc.to_le_bytes());
        for (i, h) in homes.iter().enumerate() {
            desc[24 + 4 * i..28 + 4 * i].copy_from_slice(&h.to_le_bytes());
        }
        self.dev.write(l.journal_start, &desc)?;
        for (i, img) in images.iter().enumerate() {
            self.dev.write(l.journal_start + 1 + i as u32, img)?;
        }
        let mut commit = vec![0u8; ps];
        commit[0..8].copy_from_slice(COMMIT_MAGIC);
        commit[8..16].copy_from_slice(&self.journal_seq.to_le_bytes());
        commit[16..20].copy_from_slice(&crc.to_le_bytes());
        self.dev.write(l.journal_start + 1 + homes.len() as u32, &commit)?;
        self.stats.metadata_journal_writes += homes.len() as u64 + 2;
        self.flush()?;
        for (h, img) in homes.iter().zip(&images) {
            self.dev.write(*h, img)?;
            self.read_cache.forget(*h);
            self.stats.metadata_page_writes += 1;
        }
        self.fold(None);
        Ok(())
    }

    /// Mount: if the journal holds a committed transaction, write it in place again.
    pub(crate) fn replay_journal(&mut self) -> Result<()> {
        let l = self.layout;
        let ps = self.page_size();
        let mut desc = vec![0u8; ps];
        self.dev.read(l.journal_start, &mut desc)?;
        if &desc[0..8] != JOURNAL_MAGIC {
            return Ok(());
        }
        let seq = u64::from_le_bytes(desc[8..16].try_into().expect("8 bytes"));
        let count = u32::from_le_bytes(desc[16..20].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(desc[20..24].try_into().expect("4 bytes"));
        if count + 2 > l.journal_pages || 24 + 4 * count as usize > ps {
            return Err(FsError::Journal(format!("descriptor names {count} pages")));
        }
        let mut commit = vec![0u8; ps];
        self.dev.read(l.journal_start + 1 + count, &mut commit)?;
        let committed = &commit[0..8] == COMMIT_MAGIC
            && u64::from_le_bytes(commit[8..16].try_into().expect("8 bytes")) == seq
            && u32::from_le_bytes(commit[16..20].try_into().expect("4 bytes")) == crc;
        self.journal_seq = seq;
        if !committed {
            return Ok(()); // torn journal transaction: its metadata never went in place
        }
        let mut images = Vec::with_capacity(count as usize);
        let mut hasher = crc32fast::Hasher::new();
        for i in 0..count {
            let mut img = vec![0u8; ps];
            self.dev.read(l.journal_start + 1 + i, &mut img)?;
            hasher.update(&img);
            images.push(img);
        }
        if hasher.finalize() != crc {
            return Ok(()); // the commit record of an older transaction over newer pages
        }
        for (i, img) in images.iter().enumerate() {
            let home = u32::from_le_bytes(desc[24 + 4 * i..28 + 4 * i].try_into().expect("4 bytes"));
            if !l.meta_pages().contains(&home) && !l.in_data(home) {
                return Err(FsError::Journal(format!(
                    "journal names page {home}, outside the metadata and data areas"
                )));
            }
            self.dev.write(home, img)?;
            self.read_cache.forget(home);
        }
        self.dev.flush()?;
        Ok(())
    }
}
