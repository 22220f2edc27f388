//! A transaction's pages as CFC reads them: linked clusters, and the heads
//! that must hold TRUE (§3.1.3, §3.4).
//!
//! A *cluster* is one page (page-based flags) or the transaction's pages in
//! one block (block-based flags, §3.4: "a group of linked shadow pages
//! within the same block"). A link from a page of one cluster to a page of
//! another makes an edge between the clusters; links within a cluster are
//! free. The paper's *heads* (`U`, pages no link points to) become the
//! clusters no other cluster points to. With block-based flags two clusters
//! can point to each other (the pages of a transaction striped over the
//! dies alternate between blocks), so heads are taken on the graph's
//! strongly connected components: a *source* is a component no edge enters
//! from outside. CFC commits a transaction by a TRUE in every source; a
//! source without one at recovery means the transaction did not commit (a
//! cut between the flags of several heads, §3.1.3 step 2).

use txftl_nand::Ppn;

/// How clusters are formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagMode {
    /// Every page its own cluster (§3.1).
    Page,
    /// A transaction's pages in one block form a cluster (§3.4).
    Block { pages_per_block: u32 },
}

/// One page of a transaction, as the graph needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxPage {
    pub ppn: Ppn,
    /// The framework's sequence number (a link counts only into an older page).
    pub seq: u64,
    pub link: Option<Ppn>,
    pub is_true: bool,
}

/// A source component: whether it holds a TRUE, and its newest page (where
/// a commit programs the flag it lacks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Source {
    pub is_true: bool,
    pub newest: Ppn,
    /// Pages in it.
    pub pages: u32,
}

impl FlagMode {
    fn cluster_key(self, ppn: Ppn) -> u32 {
        match self {
            FlagMode::Page => ppn,
            FlagMode::Block { pages_per_block } => ppn / pages_per_block,
        }
    }
}

/// The sources of the graph of `pages` (one transaction's pages on flash,
/// any order). A link to a page not among them, or to one not older, is
/// dangling and makes no edge.
pub fn sources(pages: &[TxPage], mode: FlagMode) -> Vec<Source> {
    sources_with_members(pages, mode).into_iter().map(|(s, _)| s).collect()
}

/// [`sources`], each with its pages (indices into `pages`).
pub fn sources_with_members(pages: &[TxPage], mode: FlagMode) -> Vec<(Source, Vec<usize>)> {
    if pages.is_empty() {
        return Vec::new();
    }
    // Sorted vectors searched by halves, not maps: recovery builds this
    // graph for every transaction on flash at every mount (a crash set's
    // points spent half their time allocating B-tree nodes here).
    let mut by_ppn: Vec<(Ppn, usize)> = pages.iter().enumerate().map(|(i, p)| (p.ppn, i)).collect();
    // Stable: of pages sharing a physical page the last one listed wins.
    by_ppn.sort_by_key(|e| e.0);
    let page_at = |ppn: Ppn| {
        let end = by_ppn.partition_point(|e| e.0 <= ppn);
        (end > 0 && by_ppn[end - 1].0 == ppn).then(|| &pages[by_ppn[end - 1].1])
    };
    // Clusters, numbered in the order of their key.
    let mut keys: Vec<u32> = pages.iter().map(|p| mode.cluster_key(p.ppn)).collect();
    keys.sort_unstable();
    keys.dedup();
    let n = keys.len();
    let cluster = |ppn: Ppn| keys.binary_search(&mode.cluster_key(ppn)).expect("a page's cluster is listed");
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    for p in pages {
        let Some(target) = p.link.and_then(page_at) else {
            continue;
        };
        if target.seq >= p.seq {
            continue;
        }
        let (a, b) = (cluster(p.ppn), cluster(target.ppn));
        if a != b {
            edges[a].push(b);
        }
    }
    let comp = components(&edges);
    let comps = comp.iter().copied().max().map_or(0, |m| m + 1);
    let mut entered = vec![false; comps];
    for (a, out) in edges.iter().enumerate() {
        for &b in out {
            if comp[a] != comp[b] {
                entered[comp[b]] = true;
            }
        }
    }
    // By component, in the order of its number.
    let mut found: Vec<Option<(Source, u64, Vec<usize>)>> = vec![None; comps];
    for (i, p) in pages.iter().enumerate() {
        let c = comp[cluster(p.ppn)];
        if entered[c] {
            continue;
        }
        let (s, best, members) = found[c].get_or_insert((
            Source {
                is_true: false,
                newest: p.ppn,
                pages: 0,
            },
            p.seq,
            Vec::new(),
        ));
        s.is_true |= p.is_true;
        s.pages += 1;
        members.push(i);
        if p.seq >= *best {
            *best = p.seq;
            s.newest = p.ppn;
        }
    }
    found.into_iter().flatten().map(|(s, _, m)| (s, m)).collect()
}

/// Strongly connected components (Tarjan's algorithm, iterative: a
/// transaction of thousands of pages chains as deep): each node's component.
fn components(edges: &[Vec<usize>]) -> Vec<usize> {
    const NONE: usize = usize::MAX;
    let n = edges.len();
    let (mut index, mut low, mut comp) = (vec![NONE; n], vec![0; n], vec![NONE; n]);
    let mut on_stack = vec![false; n];
    let (mut stack, mut next_index, mut next_comp) = (Vec::new(), 0, 0);
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        // (node, next edge to look at)
        let mut call: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut e)) = call.last_mut() {
            if let Some(&w) = edges[v].get(*e) {
                *e += 1;
                if index[w] == NONE {
                    index[w] = next_index;
                    low[w] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            call.pop();
            if let Some(&(parent, _)) = call.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                loop {
                    let w = stack.pop().expect("v is on the stack");
                    on_stack[w] = false;
                    comp[w] = next_comp;
                    if w == v {
                        break;
                    }
                }
                next_comp += 1;
            }
        }
    }
    debug_assert!(comp.iter().all(|&c| c != NONE), "a node left without a component");
    comp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(ppn: Ppn, seq: u64, link: Option<Ppn>, is_true: bool) -> TxPage {
        TxPage { ppn, seq, link, is_true }
    }

    /// Fig. 5 / Example 3.1: a chain has one head, the last page; a page
    /// GC removed mid-chain leaves two heads.
    #[test]
    fn a_chain_has_one_head_and_a_gap_makes_two() {
        let chain = [page(10, 1, None, false), page(20, 2, Some(10), false), page(30, 3, Some(20), true)];
        assert_eq!(
            sources(&chain, FlagMode::Page),
            vec![Source {
                is_true: true,
                newest: 30,
                pages: 1
            }]
        );
        let gap = [chain[0], chain[2]];
        let s = sources(&gap, FlagMode::Page);
        assert_eq!(s.len(), 2);
        assert!(s.iter().any(|s| s.newest == 10 && !s.is_true));
    }

    /// A link into a younger page (the target erased and programmed again
    /// by the same transaction) makes no edge.
    #[test]
    fn a_link_into_a_younger_page_dangles() {
        let p = [page(10, 5, None, false), page(20, 2, Some(10), true)];
        assert_eq!(sources(&p, FlagMode::Page).len(), 2);
    }

    /// Fig. 8b: pages striped over two blocks, linked page by page, form
    /// two clusters pointing at each other: one source, one flag.
    #[test]
    fn block_clusters_pointing_at_each_other_are_one_source() {
        let ppb = 64;
        let (a, b) = (0, 64);
        let p = [
            page(b, 1, None, false),
            page(a, 2, Some(b), false),
            page(b + 1, 3, Some(a), false),
            page(a + 1, 4, Some(b + 1), true),
        ];
        let s = sources(&p, FlagMode::Block { pages_per_block: ppb });
        assert_eq!(
            s,
            vec![Source {
                is_true: true,
                newest: a + 1,
                pages: 4
            }]
        );
        // Page-based, the same pages have one head: the newest.
        assert_eq!(sources(&p, FlagMode::Page).len(), 1);
    }
}
