//! A byte trie over the vocabulary: the lookups sentencepiece does with its darts-clone
//! double arrays (every piece that is a prefix of the text at a position), with the same
//! answers. Keys never contain NUL (the model loader refuses such pieces), the one case
//! where a C-string double array would differ from a trie.

#[derive(Default)]
struct Node {
    /// Children, sorted by byte.
    children: Vec<(u8, u32)>,
    value: Option<u32>,
}

/// Byte strings to values.
pub struct Trie {
    nodes: Vec<Node>,
}

impl Trie {
    /// A trie of `(key, value)`; a repeated key keeps its first value.
    pub fn new<'a>(entries: impl IntoIterator<Item = (&'a [u8], u32)>) -> Trie {
        let mut nodes = vec![Node::default()];
        for (key, v) in entries {
            let mut at = 0usize;
            for &b in key {
                at = match nodes[at].children.binary_search_by_key(&b, |c| c.0) {
                    Ok(k) => nodes[at].children[k].1 as usize,
                    Err(k) => {
                        let id = nodes.len() as u32;
                        nodes[at].children.insert(k, (b, id));
                        nodes.push(Node::default());
                        id as usize
                    }
                };
            }
            nodes[at].value.get_or_insert(v);
        }
        Trie { nodes }
    }

    fn child(&self, at: usize, b: u8) -> Option<usize> {
        let c = &self.nodes[at].children;
        c.binary_search_by_key(&b, |c| c.0)
            .ok()
            .map(|k| c[k].1 as usize)
    }

    /// Calls `each(length, value)` for every key that is a prefix of `text`, shortest
    /// first.
    pub fn prefixes(&self, text: &[u8], mut each: impl FnMut(usize, u32)) {
        let mut at = 0;
        for (i, &b) in text.iter().enumerate() {
            match self.child(at, b) {
                Some(n) => at = n,
                None => return,
            }
            if let Some(v) = self.nodes[at].value {
                each(i + 1, v);
            }
        }
    }

    /// The length of the longest key that is a prefix of `text` (0 if none).
    pub fn longest_prefix(&self, text: &[u8]) -> usize {
        let mut n = 0;
        self.prefixes(text, |len, _| n = len);
        n
    }
}
