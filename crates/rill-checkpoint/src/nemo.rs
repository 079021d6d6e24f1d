//! NeMo `.nemo` archives (spec §2.1): an uncompressed tar whose members are
//! `./model_config.yaml`, `./model_weights.ckpt` (a [`crate::torch`] zip) and the
//! registered artifacts `./<32-hex-uuid>_<basename>` (tokenizer dictionaries…).
//!
//! The file is memory-mapped and every member is a borrowed byte range of it, so
//! opening a 1.2 GB archive copies nothing until tensors are widened.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use crate::error::{CheckpointError, Result};
use crate::torch::StateDict;
use crate::{map_file, Bytes};

/// Most members accepted (the real Magpie archive has 12).
const MAX_MEMBERS: usize = 4096;
/// Largest `model_config.yaml` read as text (the real one is 7.5 kB).
const MAX_CONFIG_BYTES: usize = 4 << 20;

pub const CONFIG_MEMBER: &str = "model_config.yaml";
pub const WEIGHTS_MEMBER: &str = "model_weights.ckpt";

/// An opened `.nemo` archive.
pub struct Nemo {
    path: PathBuf,
    bytes: Bytes,
    /// Member names without the leading `./`, with their byte ranges.
    members: Vec<(String, usize, usize)>,
}

impl std::fmt::Debug for Nemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nemo")
            .field("path", &self.path)
            .field("members", &self.members.len())
            .finish()
    }
}

fn list_members(b: &[u8]) -> std::result::Result<Vec<(String, usize, usize)>, String> {
    let mut archive = tar::Archive::new(Cursor::new(b));
    let mut out = Vec::new();
    let entries = archive.entries_with_seek().map_err(|e| e.to_string())?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("tar member {}: {e}", out.len()))?;
        if !entry.header().entry_type().is_file() {
            continue; // directories ("./"), links: nothing NeMo needs
        }
        let raw = entry.path_bytes();
        let name =
            std::str::from_utf8(&raw).map_err(|_| "a member name is not UTF-8".to_string())?;
        let name = name.strip_prefix("./").unwrap_or(name).to_string();
        let start = entry.raw_file_position();
        let size = entry.size();
        let (start, end) = match start.checked_add(size) {
            Some(end) if end <= b.len() as u64 => (start as usize, end as usize),
            _ => {
                return Err(format!(
                    "member {name} ({size} bytes at {start}) runs past the end of the {}-byte file",
                    b.len()
                ))
            }
        };
        if out.len() >= MAX_MEMBERS {
            return Err(format!("more than {MAX_MEMBERS} members"));
        }
        out.push((name, start, end));
    }
    if out.is_empty() {
        return Err("no members (not a tar archive?)".into());
    }
    Ok(out)
}

impl Nemo {
    /// Maps `path` and lists its members.
    pub fn open(path: impl AsRef<Path>) -> Result<Nemo> {
        let path = path.as_ref();
        let bytes = map_file(path)?;
        Self::parse(path.to_path_buf(), bytes)
    }

    /// Parses an archive held in memory; `name` labels errors.
    pub fn from_bytes(name: impl AsRef<Path>, bytes: Vec<u8>) -> Result<Nemo> {
        Self::parse(name.as_ref().to_path_buf(), Bytes::Owned(bytes))
    }

    fn parse(path: PathBuf, bytes: Bytes) -> Result<Nemo> {
        match list_members(&bytes) {
            Ok(members) => Ok(Nemo {
                path,
                bytes,
                members,
            }),
            Err(reason) => Err(self_error(path, reason)),
        }
    }

    fn error(&self, reason: String) -> CheckpointError {
        self_error(self.path.clone(), reason)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Member names (without `./`), in archive order.
    pub fn members(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|(n, _, _)| n.as_str())
    }

    /// The bytes of the member named exactly `name` (a leading `./` is ignored).
    pub fn member(&self, name: &str) -> Option<&[u8]> {
        let name = name.strip_prefix("./").unwrap_or(name);
        self.members
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|&(_, s, e)| &self.bytes[s..e])
    }

    /// An artifact by the basename NeMo registered it under: the member named
    /// `<basename>` or `<uuid>_<basename>` (a `nemo:` prefix, as configs write
    /// artifact paths, is ignored). Two matches are an error.
    pub fn artifact(&self, basename: &str) -> Result<Option<(String, &[u8])>> {
        let base = basename.strip_prefix("nemo:").unwrap_or(basename);
        let base = base.rsplit('/').next().unwrap_or(base);
        if let Some(b) = self.member(base) {
            return Ok(Some((base.to_string(), b)));
        }
        let suffix = format!("_{base}");
        let mut hits = self.members.iter().filter(|(n, _, _)| n.ends_with(&suffix));
        match (hits.next(), hits.next()) {
            (None, _) => Ok(None),
            (Some(&(ref n, s, e)), None) => Ok(Some((n.clone(), &self.bytes[s..e]))),
            (Some((a, _, _)), Some((b, _, _))) => {
                Err(self.error(format!("two members end in {suffix}: {a} and {b}")))
            }
        }
    }

    /// `model_config.yaml` as text.
    pub fn config_yaml(&self) -> Result<&str> {
        let b = self
            .member(CONFIG_MEMBER)
            .ok_or_else(|| self.error(format!("no {CONFIG_MEMBER} member")))?;
        if b.len() > MAX_CONFIG_BYTES {
            return Err(self.error(format!("{CONFIG_MEMBER} is {} bytes", b.len())));
        }
        std::str::from_utf8(b).map_err(|_| self.error(format!("{CONFIG_MEMBER} is not UTF-8")))
    }

    /// `model_config.yaml` parsed to JSON (a mapping; see [`crate::yaml`]).
    pub fn config_json(&self) -> Result<serde_json::Value> {
        let v = crate::yaml::to_json(self.config_yaml()?)
            .map_err(|r| self.error(format!("{CONFIG_MEMBER}: {r}")))?;
        if !v.is_object() {
            return Err(self.error(format!("{CONFIG_MEMBER} is not a mapping")));
        }
        Ok(v)
    }

    /// The state dict of `model_weights.ckpt`, borrowing this archive's bytes.
    pub fn state_dict(&self) -> Result<StateDict<'_>> {
        let b = self
            .member(WEIGHTS_MEMBER)
            .ok_or_else(|| self.error(format!("no {WEIGHTS_MEMBER} member")))?;
        StateDict::parse(b).map_err(|r| self.error(format!("{WEIGHTS_MEMBER}: {r}")))
    }
}

fn self_error(path: PathBuf, reason: String) -> CheckpointError {
    CheckpointError::BadContainer {
        path,
        format: ".nemo (tar)",
        reason,
    }
}
