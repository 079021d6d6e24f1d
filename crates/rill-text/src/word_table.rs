//! A string → string map built once from the dictionary: keys and values live in one
//! arena, an open-addressing table of entry indices finds them. Compared with a
//! `HashMap<Box<str>, _>` it makes no allocation per word (126k of them), which is
//! most of the start-up time.

use std::ops::Range;

/// One word: its key and value as byte ranges of the arena.
#[derive(Clone)]
struct Entry {
    key: Range<u32>,
    value: Range<u32>,
}

pub struct WordTable {
    arena: String,
    entries: Vec<Entry>,
    /// Entry index + 1 per slot, 0 = empty; the length is a power of two, at most half full.
    slots: Vec<u32>,
}

/// A fast, well-mixed hash of a word (FNV-style over 8-byte words, splitmix64 finaliser).
/// Not DoS-resistant, and needs not be: the table's layout is fixed by the dictionary,
/// and a look-up of any word costs the probe length of that layout.
fn hash(s: &str) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325 ^ s.len() as u64;
    let mut chunks = s.as_bytes().chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        h = (h ^ u64::from_le_bytes(word))
            .wrapping_mul(0x0000_0100_0000_01B3)
            .rotate_left(23);
    }
    for &b in chunks.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^ (h >> 31)
}

/// The arena or an entry count outgrew the u32 indices.
#[derive(Debug)]
pub struct TooLarge;

impl WordTable {
    pub fn with_capacity(words: usize, arena_bytes: usize) -> Self {
        let slots = (words.max(8) * 2).next_power_of_two();
        WordTable {
            arena: String::with_capacity(arena_bytes),
            entries: Vec::with_capacity(words),
            slots: vec![0; slots],
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    fn text(&self, r: &Range<u32>) -> &str {
        &self.arena[r.start as usize..r.end as usize]
    }

    /// The slot holding `key`, or the empty slot where it would go.
    fn slot_of(&self, key: &str) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = hash(key) as usize & mask;
        loop {
            match self.slots[i] {
                0 => return i,
                s if self.text(&self.entries[s as usize - 1].key) == key => return i,
                _ => i = (i + 1) & mask,
            }
        }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        match self.slots[self.slot_of(key)] {
            0 => None,
            s => Some(self.text(&self.entries[s as usize - 1].value)),
        }
    }

    /// Appends `text` to the arena, returning its range.
    fn push(&mut self, text: impl FnOnce(&mut String)) -> Result<Range<u32>, TooLarge> {
        let start = u32::try_from(self.arena.len()).map_err(|_| TooLarge)?;
        text(&mut self.arena);
        let end = u32::try_from(self.arena.len()).map_err(|_| TooLarge)?;
        Ok(start..end)
    }

    /// Inserts `key` unless it is present; returns whether it was inserted.
    /// `write_value` appends the value to the arena.
    pub fn insert_new(
        &mut self,
        key: &str,
        write_value: impl FnOnce(&mut String),
    ) -> Result<bool, TooLarge> {
        let slot = self.slot_of(key);
        if self.slots[slot] != 0 {
            return Ok(false);
        }
        self.insert_at(slot, key, write_value)?;
        Ok(true)
    }

    /// Inserts `key`, or replaces its value.
    pub fn insert(
        &mut self,
        key: &str,
        write_value: impl FnOnce(&mut String),
    ) -> Result<(), TooLarge> {
        let slot = self.slot_of(key);
        match self.slots[slot] {
            0 => self.insert_at(slot, key, write_value),
            s => {
                let value = self.push(write_value)?;
                self.entries[s as usize - 1].value = value;
                Ok(())
            }
        }
    }

    fn insert_at(
        &mut self,
        slot: usize,
        key: &str,
        write_value: impl FnOnce(&mut String),
    ) -> Result<(), TooLarge> {
        let index = u32::try_from(self.entries.len() + 1).map_err(|_| TooLarge)?;
        let key_range = self.push(|a| a.push_str(key))?;
        let value = self.push(write_value)?;
        self.entries.push(Entry {
            key: key_range,
            value,
        });
        self.slots[slot] = index;
        if self.entries.len() * 2 > self.slots.len() {
            self.grow();
        }
        Ok(())
    }

    fn grow(&mut self) {
        let mut slots = vec![0u32; self.slots.len() * 2];
        let mask = slots.len() - 1;
        for (n, e) in self.entries.iter().enumerate() {
            let mut i = hash(self.text(&e.key)) as usize & mask;
            while slots[i] != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = n as u32 + 1;
        }
        self.slots = slots;
    }

    /// Keys and values in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries
            .iter()
            .map(|e| (self.text(&e.key), self.text(&e.value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_get_replace_grow() {
        let mut t = WordTable::with_capacity(1, 0);
        for i in 0..1000 {
            assert!(t
                .insert_new(&format!("w{i}"), |a| a.push_str(&i.to_string()))
                .unwrap());
        }
        assert!(!t.insert_new("w5", |a| a.push('x')).unwrap());
        t.insert("w7", |a| a.push_str("seven")).unwrap();
        assert_eq!(t.len(), 1000);
        assert_eq!(t.get("w5"), Some("5"));
        assert_eq!(t.get("w7"), Some("seven"));
        assert_eq!(t.get("w1000"), None);
        assert_eq!(t.iter().nth(3), Some(("w3", "3")));
    }
}
