//! A fixed-size bit set: one bit per physical page where the FTL needs only a
//! yes or no (8 bytes per 64 pages instead of a byte or a word each).

#[derive(Clone, Debug)]
pub(crate) struct Bits {
    words: Vec<u64>,
}

impl Bits {
    pub fn new(len: usize) -> Bits {
        Bits {
            words: vec![0; len.div_ceil(64)],
        }
    }

    #[inline]
    pub fn get(&self, i: u32) -> bool {
        self.words[i as usize / 64] & (1 << (i % 64)) != 0
    }

    #[inline]
    pub fn set(&mut self, i: u32, on: bool) {
        let w = &mut self.words[i as usize / 64];
        if on {
            *w |= 1 << (i % 64);
        } else {
            *w &= !(1 << (i % 64));
        }
    }

    /// Indexes of the bits set, in order.
    pub fn ones(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut word = word;
            std::iter::from_fn(move || {
                (word != 0).then(|| {
                    let b = word.trailing_zeros();
                    word &= word - 1;
                    (w * 64) as u32 + b
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_and_iterate() {
        let mut b = Bits::new(130);
        for i in [0, 63, 64, 129] {
            b.set(i, true);
        }
        b.set(63, false);
        assert!(b.get(0) && !b.get(63) && b.get(64) && b.get(129) && !b.get(1));
        assert_eq!(b.ones().collect::<Vec<_>>(), vec![0, 64, 129]);
    }
}
