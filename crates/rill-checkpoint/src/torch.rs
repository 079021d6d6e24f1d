//! `torch.save` zip checkpoints (`<archive>/data.pkl` + `<archive>/data/<key>`
//! raw little-endian storages, stored uncompressed) holding a state dict.
//!
//! The zip directory is read with the `zip` crate; storages are then borrowed
//! straight from the caller's bytes (no copy), after checking that each is stored
//! uncompressed and lies inside them.

use std::collections::HashMap;
use std::io::Cursor;

use zip::CompressionMethod;

use crate::error::Result;
use crate::pickle::{self, TensorMeta, Value};
use crate::raw::RawTensor;

/// Largest `data.pkl` read (the real Magpie's is ~30 kB).
const MAX_PICKLE_BYTES: u64 = 64 << 20;
/// How many times over the tensors may view their storages in total (tied weights
/// view one storage twice).
const MAX_ALIASING: usize = 2;
/// Most zip members accepted.
const MAX_MEMBERS: usize = 1 << 16;

/// A state dict: tensor names in file order and their storages.
#[derive(Debug)]
pub struct StateDict<'a> {
    entries: Vec<(String, TensorMeta)>,
    index: HashMap<String, usize>,
    storages: HashMap<String, &'a [u8]>,
}

fn stored_range(
    zip: &mut zip::ZipArchive<Cursor<&[u8]>>,
    index: usize,
    total: usize,
) -> std::result::Result<(String, usize, usize), String> {
    let f = zip
        .by_index_raw(index)
        .map_err(|e| format!("zip member {index}: {e}"))?;
    let name = f
        .name()
        .map_err(|e| format!("zip member {index}: {e}"))?
        .into_owned();
    if f.compression() != CompressionMethod::Stored || f.encrypted() {
        return Err(format!(
            "member {name} is compressed or encrypted; torch.save stores members uncompressed"
        ));
    }
    let start = f
        .data_start()
        .ok_or_else(|| format!("member {name} has no data offset"))?;
    let len = f.size();
    match start.checked_add(len) {
        Some(end) if end <= total as u64 && f.compressed_size() == len => {
            Ok((name, start as usize, end as usize))
        }
        _ => Err(format!(
            "member {name} ({len} bytes at {start}) runs past the end of the {total}-byte archive"
        )),
    }
}

impl<'a> StateDict<'a> {
    /// Parses a torch zip checkpoint held in `bytes` (e.g. a slice of a mapped `.nemo`).
    /// Errors are plain reasons; the caller adds the path.
    pub fn parse(bytes: &'a [u8]) -> std::result::Result<StateDict<'a>, String> {
        let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| {
            format!("not a torch zip checkpoint ({e}); legacy (pre-1.6) torch files are not read")
        })?;
        if zip.len() > MAX_MEMBERS {
            return Err(format!("{} zip members", zip.len()));
        }
        let mut members = HashMap::new();
        for i in 0..zip.len() {
            let (name, s, e) = stored_range(&mut zip, i, bytes.len())?;
            members.insert(name, &bytes[s..e]);
        }
        let pkl_name = members
            .keys()
            .filter(|n| n.ends_with("/data.pkl") && n.matches('/').count() == 1)
            .min()
            .cloned()
            .ok_or("no <archive>/data.pkl member: not a torch.save checkpoint")?;
        let prefix = &pkl_name[..pkl_name.len() - "data.pkl".len()];
        if let Some(order) = members.get(&format!("{prefix}byteorder")) {
            if *order != b"little" {
                return Err(format!(
                    "byte order {:?}; only little-endian checkpoints are read",
                    String::from_utf8_lossy(order)
                ));
            }
        }
        let pkl = members[&pkl_name];
        if pkl.len() as u64 > MAX_PICKLE_BYTES {
            return Err(format!("data.pkl is {} bytes", pkl.len()));
        }
        let root = pickle::load(pkl).map_err(|e| format!("data.pkl: {e}"))?;
        let dict = match &*root {
            Value::Dict(d) => {
                // Lightning-style `{"state_dict": {...}, ...}` wraps the real one.
                let inner = d.iter().find_map(|(k, v)| match (&**k, &**v) {
                    (Value::Str(s), Value::Dict(inner)) if s == "state_dict" => Some(inner),
                    _ => None,
                });
                inner.unwrap_or(d)
            }
            _ => return Err("data.pkl does not hold a dict".into()),
        };
        let mut entries = Vec::with_capacity(dict.len());
        let mut storages = HashMap::new();
        let mut index = HashMap::new();
        for (k, v) in dict {
            let Value::Str(name) = &**k else {
                return Err("a state-dict key is not a string".into());
            };
            let Value::Tensor(meta) = &**v else {
                return Err(format!("state-dict entry {name} is not a tensor"));
            };
            let record = format!("{prefix}data/{}", meta.storage_key);
            let data = *members
                .get(&record)
                .ok_or_else(|| format!("tensor {name}: storage record {record} is missing"))?;
            let need = meta.storage_numel.checked_mul(meta.dtype.size());
            if need.is_none_or(|n| n > data.len()) {
                return Err(format!(
                    "tensor {name}: storage {record} claims {} elements but holds {} bytes",
                    meta.storage_numel,
                    data.len()
                ));
            }
            storages.insert(meta.storage_key.clone(), data);
            if index.insert(name.clone(), entries.len()).is_some() {
                return Err(format!("state-dict key {name} appears twice"));
            }
            entries.push((name.clone(), meta.clone()));
        }
        // Views may share a storage (torch.save keeps views), but together they may not
        // claim much more than the storages hold: a crafted pickle aliasing one storage
        // many times must not decode to many times the file's size.
        let stored: usize = storages.values().map(|s| s.len()).sum();
        let viewed = entries.iter().try_fold(0usize, |acc, (_, m)| {
            m.shape
                .iter()
                .try_fold(m.dtype.size(), |a, &d| a.checked_mul(d))
                .and_then(|b| acc.checked_add(b))
        });
        if viewed.is_none_or(|v| v > MAX_ALIASING * stored) {
            return Err(format!(
                "its tensors view {} bytes of {stored} bytes of storage (more than {MAX_ALIASING}x): crafted or expanded tensors",
                viewed.map_or("an overflowing number of".to_string(), |v| v.to_string())
            ));
        }
        let sd = StateDict {
            entries,
            index,
            storages,
        };
        // Every view must fit its storage; checked once here so `tensor` cannot fail later on it.
        for (name, _) in &sd.entries {
            sd.tensor(name).map_err(|e| e.to_string())?;
        }
        Ok(sd)
    }

    /// Tensor names in file order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn meta(&self, name: &str) -> Option<&TensorMeta> {
        self.index.get(name).map(|&i| &self.entries[i].1)
    }

    /// A view of one tensor (strided views of a shared storage are allowed).
    pub fn tensor(&self, name: &str) -> Result<RawTensor<'a>> {
        let (name, m) = self
            .index
            .get(name)
            .map(|&i| &self.entries[i])
            .ok_or_else(|| crate::CheckpointError::BadTensor {
                name: name.to_string(),
                reason: "not in the state dict".into(),
            })?;
        let storage = self.storages[&m.storage_key];
        let storage = &storage[..m.storage_numel * m.dtype.size()];
        RawTensor::strided(
            name,
            m.dtype,
            m.shape.clone(),
            m.stride.clone(),
            m.offset,
            storage,
        )
    }
}
