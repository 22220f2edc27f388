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
    graph_sources(pages, mode, false).into_iter().map(|(s, _)| s).collect()
}

/// [`sources`], each with its pages (indices into `pages`).
pub fn sources_with_members(pages: &[TxPage], mode: FlagMode) -> Vec<(Source, Vec<usize>)> {
    graph_sources(pages, mode, true)
}

/// The sources, with their members if `members` (else empty lists). Few
/// allocations whatever the transaction's size: recovery builds this graph
/// for every transaction on flash at every mount, and a crash set mounts
/// after every point (allocations were a quarter of a CFC set's time).
fn graph_sources(pages: &[TxPage], mode: FlagMode, members: bool) -> Vec<(Source, Vec<usize>)> {
    if let [p] = pages {
        // One page: one cluster, and a link to itself is never into an older page.
        let source = Source {
            is_true: p.is_true,
            newest: p.ppn,
            pages: 1,
        };
        return vec![(source, if members { vec![0] } else { Vec::new() })];
    }
    if pages.is_empty() {
        return Vec::new();
    }
    // Sorted vectors searched by halves, not maps.
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
    let cluster = |ppn: Ppn| keys.binary_search(&mode.cluster_key(ppn)).expect("a page's cluster is listed");
    let mut pairs = Vec::new();
    for p in pages {
        let Some(target) = p.link.and_then(page_at) else {
            continue;
        };
        if target.seq >= p.seq {
            continue;
        }
        let (a, b) = (cluster(p.ppn), cluster(target.ppn));
        if a != b {
            pairs.push((a, b));
        }
    }
    let graph = Graph::new(keys.len(), &pairs);
    let comp = components(&graph);
    let comps = comp.iter().copied().max().map_or(0, |m| m + 1);
    let mut entered = vec![false; comps];
    for &(a, b) in &pairs {
        if comp[a] != comp[b] {
            entered[comp[b]] = true;
        }
    }
    // By component, in the order of its number.
    let mut found: Vec<Option<(Source, u64, Vec<usize>)>> = vec![None; comps];
    for (i, p) in pages.iter().enumerate() {
        let c = comp[cluster(p.ppn)];
        if entered[c] {
            continue;
        }
        let (s, best, list) = found[c].get_or_insert((
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
        if members {
            list.push(i);
        }
        if p.seq >= *best {
            *best = p.seq;
            s.newest = p.ppn;
        }
    }
    found.into_iter().flatten().map(|(s, _, m)| (s, m)).collect()
}

/// Edges by source node (compressed rows): node `v`'s targets are
/// `to[start[v]..start[v + 1]]`, in the order the edges were listed (the
/// order Tarjan's walk takes them, and so the components' numbers).
struct Graph {
    start: Vec<usize>,
    to: Vec<usize>,
}

impl Graph {
    fn new(nodes: usize, edges: &[(usize, usize)]) -> Graph {
        let mut start = vec![0usize; nodes + 1];
        for &(a, _) in edges {
            start[a + 1] += 1;
        }
        for v in 0..nodes {
            start[v + 1] += start[v];
        }
        let mut fill = start[..nodes].to_vec();
        let mut to = vec![0usize; edges.len()];
        for &(a, b) in edges {
            to[fill[a]] = b;
            fill[a] += 1;
        }
        debug_assert!((0..nodes).all(|v| fill[v] == start[v + 1]), "every row filled");
        Graph { start, to }
    }

    fn nodes(&self) -> usize {
        self.start.len() - 1
    }

    fn edge(&self, v: usize, e: usize) -> Option<usize> {
        let row = &self.to[self.start[v]..self.start[v + 1]];
        row.get(e).copied()
    }
}

/// Strongly connected components (Tarjan's algorithm, iterative: a
/// transaction of thousands of pages chains as deep): each node's component.
fn components(graph: &Graph) -> Vec<usize> {
    const NONE: usize = usize::MAX;
    let n = graph.nodes();
    let (mut index, mut low, mut comp) = (vec![NONE; n], vec![0; n], vec![NONE; n]);
    let mut on_stack = vec![false; n];
    let (mut stack, mut next_index, mut next_comp) = (Vec::new(), 0, 0);
    // (node, next edge to look at)
    let mut call: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        debug_assert!(call.is_empty(), "the previous walk returned to its root");
        call.push((root, 0));
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut e)) = call.last_mut() {
            if let Some(w) = graph.edge(v, *e) {
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

    /// The sources by brute force: a cluster's component is the clusters it
    /// reaches and is reached from; a source is one no other component's
    /// cluster reaches. Compared with [`sources_with_members`] on random
    /// transactions (seeded ChaCha8), as sets: the order is Tarjan's.
    #[test]
    fn sources_agree_with_reachability_on_random_graphs() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(41);
        for _ in 0..2000 {
            let n = rng.gen_range(1..9);
            let ppns: Vec<Ppn> = (0..n).map(|_| rng.gen_range(0..24)).collect();
            let pages: Vec<TxPage> = (0..n)
                .map(|i| {
                    let link = rng.gen_bool(0.7).then(|| ppns[rng.gen_range(0..n)]);
                    page(ppns[i], rng.gen_range(0..6), link, rng.gen_bool(0.3))
                })
                .collect();
            let mode = if rng.gen_bool(0.5) {
                FlagMode::Page
            } else {
                FlagMode::Block { pages_per_block: 4 }
            };
            let mut got: Vec<(Source, Vec<usize>)> = sources_with_members(&pages, mode);
            got.sort_by_key(|(_, m)| m.clone());
            let mut want = brute_sources(&pages, mode);
            want.sort_by_key(|(_, m)| m.clone());
            assert_eq!(got, want, "pages {pages:?}, {mode:?}");
            let plain: Vec<Source> = sources(&pages, mode);
            assert_eq!(plain.len(), got.len());
        }
    }

    fn brute_sources(pages: &[TxPage], mode: FlagMode) -> Vec<(Source, Vec<usize>)> {
        let mut keys: Vec<u32> = pages.iter().map(|p| mode.cluster_key(p.ppn)).collect();
        keys.sort_unstable();
        keys.dedup();
        let n = keys.len();
        let cl = |ppn: Ppn| keys.iter().position(|&k| k == mode.cluster_key(ppn)).unwrap();
        let mut reach = vec![vec![false; n]; n];
        for (i, row) in reach.iter_mut().enumerate() {
            row[i] = true;
        }
        for p in pages {
            // The last page listed at a physical page is the link's target.
            let Some(t) = p.link.and_then(|l| pages.iter().rev().find(|q| q.ppn == l)) else {
                continue;
            };
            if t.seq < p.seq {
                reach[cl(p.ppn)][cl(t.ppn)] = true;
            }
        }
        for k in 0..n {
            for i in 0..n {
                for j in 0..n {
                    if reach[i][k] && reach[k][j] {
                        reach[i][j] = true;
                    }
                }
            }
        }
        let same = |a: usize, b: usize| reach[a][b] && reach[b][a];
        let entered = |c: usize| (0..n).any(|o| !same(o, c) && reach[o][c]);
        let mut out: Vec<(Source, u64, Vec<usize>)> = Vec::new();
        let mut rep_of: Vec<(usize, usize)> = Vec::new();
        for (i, p) in pages.iter().enumerate() {
            let c = cl(p.ppn);
            if entered(c) {
                continue;
            }
            let slot = match rep_of.iter().find(|(r, _)| same(*r, c)) {
                Some(&(_, s)) => s,
                None => {
                    rep_of.push((c, out.len()));
                    out.push((
                        Source {
                            is_true: false,
                            newest: p.ppn,
                            pages: 0,
                        },
                        p.seq,
                        Vec::new(),
                    ));
                    out.len() - 1
                }
            };
            let (s, best, m) = &mut out[slot];
            s.is_true |= p.is_true;
            s.pages += 1;
            m.push(i);
            if p.seq >= *best {
                *best = p.seq;
                s.newest = p.ppn;
            }
        }
        out.into_iter().map(|(s, _, m)| (s, m)).collect()
    }
}
