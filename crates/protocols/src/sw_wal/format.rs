//! SW-WAL's bytes in a data page's spare area (the framework's record around
//! them holds the LPN, the sequence number and the CRCs):
//!
//! | bytes | field | meaning |
//! |---|---|---|
//! | 0..4 | target + 1, u32 LE | 0: none (a page written with `write`); else the logical page (the database page of a WAL frame) a `remap` may move this page onto, plus one |
//!
//! The rest of the protocol bytes are zero.

use txftl_ftl::{Lpn, Oob, PROTOCOL_BYTES};

/// The database page a WAL page names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemapTag {
    pub target: Option<Lpn>,
}

impl RemapTag {
    pub const NONE: RemapTag = RemapTag { target: None };

    pub fn of(oob: &Oob) -> RemapTag {
        let p = &oob.protocol;
        let v = u32::from_le_bytes([p[0], p[1], p[2], p[3]]);
        RemapTag { target: v.checked_sub(1) }
    }

    pub fn encode(&self) -> [u8; PROTOCOL_BYTES] {
        let mut b = [0u8; PROTOCOL_BYTES];
        let v = self.target.map_or(0, |t| t.wrapping_add(1));
        b[0..4].copy_from_slice(&v.to_le_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use txftl_ftl::PageKind;

    #[test]
    fn a_tag_survives_its_encoding() {
        for tag in [
            RemapTag::NONE,
            RemapTag { target: Some(0) },
            RemapTag {
                target: Some(u32::MAX - 1),
            },
        ] {
            let mut oob = Oob::new(PageKind::Data, 1, 2, 0, &[]);
            oob.protocol = tag.encode();
            assert_eq!(RemapTag::of(&oob), tag);
        }
        assert_eq!(RemapTag::NONE.encode(), [0; PROTOCOL_BYTES]);
    }
}
