//! A map kept as one `Vec` sorted by key, for what a recovery builds once in
//! key order and then only looks up or walks: SCC's and BPCC's mapping of
//! every logical page (millions at 32 GiB). A `BTreeMap` of that many
//! entries costs its nodes on top of the entries, and building one from an
//! iterator first collects and sorts a copy of them.

/// Entries sorted by key, each key once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SortedMap<K, V>(Vec<(K, V)>);

impl<K: Ord, V> SortedMap<K, V> {
    /// `entries` must be sorted by key, each key once (checked in debug builds).
    pub fn from_sorted(entries: Vec<(K, V)>) -> SortedMap<K, V> {
        debug_assert!(entries.windows(2).all(|w| w[0].0 < w[1].0), "entries not sorted by key");
        SortedMap(entries)
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        self.0.binary_search_by(|(k, _)| k.cmp(key)).ok().map(|i| &self.0[i].1)
    }

    pub fn contains_key(&self, key: &K) -> bool {
        self.get(key).is_some()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// In key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

/// In key order.
impl<K, V> IntoIterator for SortedMap<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// In key order.
impl<'a, K, V> IntoIterator for &'a SortedMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (K, V)>, fn(&'a (K, V)) -> (&'a K, &'a V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_up_and_walks_in_key_order() {
        let m = SortedMap::from_sorted(vec![(1u32, 'a'), (4, 'b'), (9, 'c')]);
        assert_eq!(m.get(&4), Some(&'b'));
        assert_eq!(m.get(&5), None);
        assert!(m.contains_key(&9) && !m.contains_key(&0));
        assert_eq!(m.len(), 3);
        assert_eq!((&m).into_iter().map(|(k, _)| *k).collect::<Vec<_>>(), vec![1, 4, 9]);
        assert_eq!(m.into_iter().map(|(_, v)| v).collect::<String>(), "abc");
    }
}
