//! Step 4's end (the module doc): where the metadata rings (superblock,
//! checkpoint, protocol logs) resume their appends.

use super::Mounted;
use crate::area::LogArea;
use crate::ftl::{superblock_blocks, Ftl, RecordLoc};
use crate::hooks::Hooks;

impl<H: Hooks> Ftl<H> {
    /// Points every ring at a fresh block (see the comment inside) and
    /// records the checkpoint used and its predecessor; `log_newest`: per
    /// protocol ring, its newest block.
    pub(super) fn resume_rings(&mut self, m: &Mounted<H::Mapping>, log_newest: Vec<Option<usize>>) {
        let geo = self.geo;
        let (sb, sb_index, ck_sb) = (&m.sb, m.sb_index, &m.ck_sb);
        // Metadata rings: the next appends go to a fresh block. The page after the
        // last programmed one may hold a torn program that reads as erased (all
        // 0xFF), so it must never be programmed: entering the next block erases it.
        // The same reason closes every partly written data block (`restore_block_states`).
        self.sb_seq = sb.sb_seq;
        self.sb_area = LogArea {
            blocks: superblock_blocks(&geo).to_vec(),
            stripe: 1,
            head_index: sb_index,
            head_page: geo.pages_per_block,
        };
        self.prev_ckpt = RecordLoc {
            seq: ck_sb.prev_ckpt.seq,
            extent: ck_sb.prev_ckpt.extent,
            bytes: ck_sb.prev_ckpt.bytes,
            crc: ck_sb.prev_ckpt.crc,
        };
        self.ckpt = RecordLoc {
            seq: ck_sb.ckpt_seq,
            extent: ck_sb.ckpt,
            bytes: ck_sb.ckpt_bytes,
            crc: ck_sb.ckpt_crc,
        };
        let ppb = geo.pages_per_block;
        // The checkpoint used stays protected until the sealing one is durable.
        let mut ckpt_area = LogArea::new(sb.ckpt_ring.clone(), sb.ckpt_stripe, ppb);
        let last = ck_sb.ckpt.page + ck_sb.ckpt.pages - 1;
        ckpt_area.head_index = (ck_sb.ckpt.index + (last / ckpt_area.stripe_pages(ppb)) as usize) % ckpt_area.stripes();
        self.ckpt_area = ckpt_area;
        for (r, newest) in sb.protocol_rings.iter().zip(log_newest) {
            // Appends resume in a fresh block after the newest one.
            self.proto_rings.push(LogArea {
                blocks: r.blocks.clone(),
                stripe: 1,
                head_index: newest.unwrap_or(r.blocks.len() - 1),
                head_page: ppb,
            });
        }
    }
}
