//! Planning: every prompt a job needs, as token sequences, arranged so that shared prefixes are
//! computed once. A job's prompts form a two-level tree: the root (system turn, shots and the
//! start of the user turn, common to every prompt) and, under it, one node per item (its state),
//! whose children are the suffixes that differ (criterion, ordering). Prefixes are cut on token
//! boundaries of the full prompts, so the logits read are exactly those of the full prompts.

/// Length of the longest common prefix of `seqs`, leaving at least `keep` tokens of each.
pub fn common_prefix(seqs: &[&[u32]], keep: usize) -> usize {
    let Some(first) = seqs.first() else { return 0 };
    let mut n = first.len();
    for s in &seqs[1..] {
        n = n.min(s.len());
        n = first[..n].iter().zip(&s[..n]).take_while(|(a, b)| a == b).count();
    }
    let shortest = seqs.iter().map(|s| s.len()).min().unwrap_or(0);
    n.min(shortest.saturating_sub(keep))
}

/// One prompt to score: its tokens and the letter tokens read at its end.
#[derive(Debug, Clone)]
pub struct PlannedPrompt {
    pub tokens: Vec<u32>,
    pub letters: Vec<u32>,
}

/// A group of prompts sharing a prefix (one item's state).
#[derive(Debug, Clone)]
pub struct Node {
    /// Tokens of the node's prefix, the root's prefix included.
    pub prefix_len: usize,
    pub prompts: Vec<PlannedPrompt>,
}

/// The tree of a job: a shared root prefix and the nodes under it.
#[derive(Debug, Clone)]
pub struct Plan {
    pub root_len: usize,
    pub nodes: Vec<Node>,
}

impl Plan {
    /// Arrange groups of prompts (one group per item) into a tree.
    pub fn new(groups: Vec<Vec<PlannedPrompt>>) -> Plan {
        let all: Vec<&[u32]> = groups.iter().flatten().map(|p| p.tokens.as_slice()).collect();
        let root_len = common_prefix(&all, 1);
        let nodes = groups
            .into_iter()
            .map(|prompts| {
                let seqs: Vec<&[u32]> = prompts.iter().map(|p| p.tokens.as_slice()).collect();
                let prefix_len = common_prefix(&seqs, 1).max(root_len);
                Node { prefix_len, prompts }
            })
            .collect();
        Plan { root_len, nodes }
    }

    /// The root's tokens (empty when there are no prompts).
    pub fn root_tokens(&self) -> &[u32] {
        self.nodes.iter().flat_map(|n| n.prompts.first()).next().map(|p| &p.tokens[..self.root_len]).unwrap_or(&[])
    }

    /// Tokens the model computes under this plan: the root once, each node's prefix once, each suffix once.
    pub fn computed_tokens(&self) -> usize {
        self.root_len
            + self
                .nodes
                .iter()
                .map(|n| {
                    (n.prefix_len - self.root_len)
                        + n.prompts.iter().map(|p| p.tokens.len() - n.prefix_len).sum::<usize>()
                })
                .sum::<usize>()
    }

    /// Tokens of every prompt, counted in full (what a cacheless run computes).
    pub fn prompt_tokens(&self) -> usize {
        self.nodes.iter().flat_map(|n| &n.prompts).map(|p| p.tokens.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: &[u32]) -> PlannedPrompt {
        PlannedPrompt { tokens: t.to_vec(), letters: vec![] }
    }

    #[test]
    fn common_prefix_keeps_a_token() {
        assert_eq!(common_prefix(&[&[1, 2, 3], &[1, 2, 4]], 1), 2);
        assert_eq!(common_prefix(&[&[1, 2, 3], &[1, 2, 3]], 1), 2);
        assert_eq!(common_prefix(&[&[1, 2, 3]], 1), 2);
        assert_eq!(common_prefix(&[&[5], &[6]], 1), 0);
    }

    #[test]
    fn two_levels_and_token_counts() {
        let plan = Plan::new(vec![vec![p(&[1, 2, 3, 4]), p(&[1, 2, 3, 5])], vec![p(&[1, 2, 6, 7, 8])]]);
        assert_eq!(plan.root_len, 2);
        assert_eq!(plan.nodes[0].prefix_len, 3);
        assert_eq!(plan.nodes[1].prefix_len, 4);
        assert_eq!(plan.root_tokens(), &[1, 2]);
        // root 2 + node0 (1 + 1 + 1) + node1 (2 + 1)
        assert_eq!(plan.computed_tokens(), 8);
        assert_eq!(plan.prompt_tokens(), 13);
    }
}

/// A node of the prompt tree (a radix trie over token sequences). The node's tokens are
/// `seqs[rep][start..end]`; a leaf ends one or more identical prompts.
#[derive(Debug, Clone)]
pub struct TrieNode {
    pub rep: usize,
    pub start: usize,
    pub end: usize,
    pub children: Vec<TrieNode>,
    /// Prompts that end at this node (leaves only).
    pub prompts: Vec<usize>,
}

impl TrieNode {
    pub fn is_leaf(&self) -> bool {
        self.children.is_empty()
    }

    /// Tokens on every edge: what the model computes when each node is computed once.
    pub fn unique_tokens(&self) -> usize {
        (self.end - self.start) + self.children.iter().map(|c| c.unique_tokens()).sum::<usize>()
    }
}

/// Build the prompt tree. Every leaf keeps at least one token, so a leaf is always read as a
/// suffix on its parent's prefix; identical prompts share a leaf.
pub fn build_trie(seqs: &[&[u32]]) -> TrieNode {
    let idx: Vec<usize> = (0..seqs.len()).collect();
    build(seqs, idx, 0)
}

fn build(seqs: &[&[u32]], idx: Vec<usize>, d: usize) -> TrieNode {
    let first = seqs[idx[0]];
    if idx.iter().all(|&i| seqs[i] == first) {
        return TrieNode { rep: idx[0], start: d, end: first.len(), children: vec![], prompts: idx };
    }
    let min_len = idx.iter().map(|&i| seqs[i].len()).min().unwrap_or(0);
    let mut l = d;
    while l + 1 < min_len && idx.iter().all(|&i| seqs[i][l] == first[l]) {
        l += 1;
    }
    let mut groups: std::collections::BTreeMap<u32, Vec<usize>> = std::collections::BTreeMap::new();
    for &i in &idx {
        groups.entry(seqs[i][l]).or_default().push(i);
    }
    let children: Vec<TrieNode> = if groups.len() == 1 && l == d {
        // One prompt is a strict prefix of another: give each distinct prompt its own leaf.
        let mut seen: Vec<usize> = Vec::new();
        let mut leaves: Vec<TrieNode> = Vec::new();
        for &i in &idx {
            match seen.iter().position(|&j| seqs[j] == seqs[i]) {
                Some(k) => leaves[k].prompts.push(i),
                None => {
                    seen.push(i);
                    leaves.push(TrieNode { rep: i, start: d, end: seqs[i].len(), children: vec![], prompts: vec![i] });
                }
            }
        }
        leaves
    } else {
        groups.into_values().map(|g| build(seqs, g, l)).collect()
    };
    TrieNode { rep: idx[0], start: d, end: l, children, prompts: vec![] }
}

#[cfg(test)]
mod trie_tests {
    use super::*;

    #[test]
    fn trie_shares_prefixes_and_counts_unique_tokens() {
        let a = [1u32, 2, 3, 4, 5];
        let b = [1u32, 2, 3, 6];
        let c = [1u32, 7, 8];
        let d = [1u32, 2, 3, 4, 5];
        let t = build_trie(&[&a, &b, &c, &d]);
        assert_eq!((t.start, t.end), (0, 1));
        // unique tokens: [1] + [2,3] + [4,5] + [6] + [7,8]
        assert_eq!(t.unique_tokens(), 1 + 2 + 2 + 1 + 2);
        let leaves: Vec<Vec<usize>> = collect(&t);
        assert!(leaves.contains(&vec![0, 3]));
        for n in all(&t) {
            if n.is_leaf() {
                assert!(n.end > n.start, "every leaf keeps a token");
            }
        }
    }

    #[test]
    fn strict_prefix_and_single_prompt() {
        let a = [1u32, 2];
        let b = [1u32, 2, 3];
        let t = build_trie(&[&a, &b]);
        let leaves = collect(&t);
        assert_eq!(leaves.len(), 2);
        let one = build_trie(&[&a]);
        assert!(one.is_leaf() && one.end == 2);
    }

    fn all(t: &TrieNode) -> Vec<&TrieNode> {
        let mut v = vec![t];
        for c in &t.children {
            v.extend(all(c));
        }
        v
    }

    fn collect(t: &TrieNode) -> Vec<Vec<usize>> {
        all(t).into_iter().filter(|n| n.is_leaf()).map(|n| n.prompts.clone()).collect()
    }
}
