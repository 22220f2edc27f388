//! The transaction mix (clause 5.2.3): which type runs next.
//!
//! A deck of 100 cards, as many of each type as its percentage, shuffled
//! with the run's seed and dealt; when it is empty it is shuffled again. Every
//! 100 transactions hold the mix exactly, and the order inside a deck is
//! random (clause 5.2.4.2 allows a deck, with at least the standard mix's
//! cards per type).

use super::rand::Random;
use super::TxKind;

/// Cards in a deck: one per percent.
pub const DECK_CARDS: usize = 100;

/// A mix is five percentages summing to 100.
pub fn validate(mix: [u32; 5]) -> Result<(), String> {
    let sum: u64 = mix.iter().map(|&p| p as u64).sum();
    if sum != DECK_CARDS as u64 {
        return Err(format!(
            "the mix {mix:?} (New-Order, Payment, Order-Status, Delivery, Stock-Level) sums to {sum}, not 100"
        ));
    }
    Ok(())
}

pub struct Deck {
    cards: Vec<TxKind>,
    dealt: usize,
    rng: Random,
}

impl Deck {
    /// A deck for `mix`, which [`validate`] accepts.
    pub fn new(mix: [u32; 5], rng: Random) -> Deck {
        validate(mix).expect("a valid mix");
        let mut cards = Vec::with_capacity(DECK_CARDS);
        for kind in TxKind::ALL {
            for _ in 0..mix[kind.index()] {
                cards.push(kind);
            }
        }
        assert_eq!(cards.len(), DECK_CARDS);
        Deck {
            dealt: cards.len(),
            cards,
            rng,
        }
    }

    /// The next transaction type.
    pub fn deal(&mut self) -> TxKind {
        if self.dealt == self.cards.len() {
            // Fisher-Yates.
            for i in (1..self.cards.len()).rev() {
                let j = self.rng.uniform(0, i as u32) as usize;
                self.cards.swap(i, j);
            }
            self.dealt = 0;
        }
        self.dealt += 1;
        self.cards[self.dealt - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpcc::STANDARD_MIX;

    #[test]
    fn every_hundred_cards_hold_the_mix() {
        let mut d = Deck::new(STANDARD_MIX, Random::new(5, 0));
        for _ in 0..3 {
            let mut n = [0u32; 5];
            for _ in 0..100 {
                n[d.deal().index()] += 1;
            }
            assert_eq!(n, STANDARD_MIX);
        }
    }

    #[test]
    fn shuffled_differently_each_deck() {
        let mut d = Deck::new(STANDARD_MIX, Random::new(5, 0));
        let a: Vec<TxKind> = (0..100).map(|_| d.deal()).collect();
        let b: Vec<TxKind> = (0..100).map(|_| d.deal()).collect();
        assert_ne!(a, b);
    }

    #[test]
    fn a_mix_must_sum_to_100() {
        assert!(validate([45, 43, 4, 4, 4]).is_ok());
        assert!(validate([100, 0, 0, 0, 0]).is_ok());
        assert!(validate([45, 43, 4, 4, 3]).unwrap_err().contains("sums to 99"));
        assert!(validate([u32::MAX, 1, 0, 0, 0]).is_err());
    }
}
