//! Magpie tensors by state-dict name (spec §2.2): built in memory ([`crate::synth`]) or
//! loaded from a safetensors file in the same layout, validated key by key.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use rill_checkpoint::writer::{self, Tensor as OutTensor};
use rill_checkpoint::{Checkpoint, Dtype, Problem};

use crate::config::Config;
use crate::error::{MagpieError, Result};

/// Values of one tensor.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorData {
    F32(Vec<f32>),
    I64(Vec<i64>),
}

/// One state-dict entry (torch shape, row-major values).
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: TensorData,
}

/// A validated set of Magpie tensors and the dimensions read from them.
#[derive(Debug, Clone)]
pub struct Weights {
    config: Config,
    tensors: BTreeMap<String, Tensor>,
    /// The format the linear layers are built in ([`crate::Model::with_format`]).
    pub(crate) matrix_format: rill_kernels::WeightFormat,
}

impl Weights {
    /// Detects the dimensions from the shapes and checks every tensor the model
    /// reads (presence, shape, dtype, the baked-context buffers); lists all problems
    /// at once. Extra tensors (e.g. `causal_mask` buffers) are ignored.
    pub fn from_tensors(tensors: BTreeMap<String, Tensor>) -> Result<Weights> {
        let config = Config::detect(
            |n| tensors.get(n).map(|t| t.shape.clone()),
            tensors.keys().map(|k| k.as_str()),
        )?;
        let mut problems = Vec::new();
        let floats = config.float_specs().into_iter().map(|(n, s)| (n, s, true));
        let ints = config.int_specs().into_iter().map(|(n, s)| (n, s, false));
        for (name, shape, float) in floats.chain(ints) {
            match tensors.get(&name) {
                None => problems.push(Problem::Missing {
                    name,
                    expected: shape,
                }),
                Some(t) if t.shape != shape => problems.push(Problem::WrongShape {
                    name,
                    expected: shape,
                    found: t.shape.clone(),
                }),
                Some(t) if matches!(t.data, TensorData::I64(_)) == float => {
                    let (expected, found) = if float {
                        ("F32, BF16 or F16", "I64")
                    } else {
                        ("I64", "a float type")
                    };
                    problems.push(Problem::WrongDtype {
                        name,
                        expected,
                        found: found.into(),
                    })
                }
                Some(_) => {}
            }
        }
        if !problems.is_empty() {
            return Err(MagpieError::Invalid(problems));
        }
        let w = Weights {
            config,
            tensors,
            matrix_format: rill_kernels::WeightFormat::F32,
        };
        w.check_baked()?;
        Ok(w)
    }

    fn check_baked(&self) -> Result<()> {
        let c = &self.config;
        let t = self.ints("_baked_embedding_T")?;
        let d = self.ints("_baked_embedding_D")?;
        let bad = |name: &str, reason: String| {
            Err(MagpieError::BadTensor {
                name: name.into(),
                reason,
            })
        };
        if t != [c.context_frames as i64] || d != [c.dim as i64] {
            return bad(
                "_baked_embedding_T",
                format!(
                    "T = {t:?}, D = {d:?} do not match baked_context_embedding.weight ({} frames of {})",
                    c.context_frames, c.dim
                ),
            );
        }
        let lens = self.ints("baked_context_embedding_len")?;
        if let Some(l) = lens.iter().find(|&&l| l < 1 || l > c.context_frames as i64) {
            return bad(
                "baked_context_embedding_len",
                format!("length {l} is outside 1..={}", c.context_frames),
            );
        }
        Ok(())
    }

    /// Loads and validates a safetensors file in the state-dict layout (F32, BF16
    /// or F16 floats, widened to f32; int64 buffers). All problems are reported at once.
    pub fn load(path: impl AsRef<Path>) -> Result<Weights> {
        let ck = Checkpoint::open(path)?;
        let config = Config::detect(|n| ck.entry(n).map(|e| e.shape.clone()), ck.names())?;
        let mut tensors = BTreeMap::new();
        let mut problems = Vec::new();
        for (name, shape) in config.float_specs() {
            let Some(e) = ck.entry(&name) else {
                problems.push(Problem::Missing {
                    name,
                    expected: shape,
                });
                continue;
            };
            if e.shape != shape {
                problems.push(Problem::WrongShape {
                    name,
                    expected: shape,
                    found: e.shape.clone(),
                });
                continue;
            }
            if !matches!(e.dtype, Dtype::F32 | Dtype::BF16 | Dtype::F16) {
                problems.push(Problem::WrongDtype {
                    name,
                    expected: "F32, BF16 or F16",
                    found: format!("{:?}", e.dtype),
                });
                continue;
            }
            let values = ck.f32(&name)?;
            ck.release(&name);
            tensors.insert(
                name,
                Tensor {
                    shape,
                    data: TensorData::F32(values),
                },
            );
        }
        for (name, shape) in config.int_specs() {
            let Some(e) = ck.entry(&name) else {
                problems.push(Problem::Missing {
                    name,
                    expected: shape,
                });
                continue;
            };
            if e.shape != shape || e.dtype != Dtype::I64 {
                problems.push(Problem::WrongDtype {
                    name,
                    expected: "I64 of the listed shape",
                    found: format!("{:?} {:?}", e.dtype, e.shape),
                });
                continue;
            }
            let t = ck.tensor(&name)?;
            let values = t
                .bytes
                .chunks_exact(8)
                .map(|b| i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                .collect();
            tensors.insert(
                name,
                Tensor {
                    shape,
                    data: TensorData::I64(values),
                },
            );
        }
        if !problems.is_empty() {
            return Err(MagpieError::Invalid(problems));
        }
        Weights::from_tensors(tensors)
    }

    /// Writes the tensors as a safetensors file (F32 / I64, state-dict names) with
    /// `metadata` in the header; atomic (via `path.partial`).
    pub fn write(&self, path: &Path, metadata: HashMap<String, String>) -> Result<()> {
        let out: Vec<(String, OutTensor<'_>)> = self
            .tensors
            .iter()
            .map(|(name, t)| {
                let (dtype, bytes) = match &t.data {
                    TensorData::F32(v) => (Dtype::F32, le_bytes_f32(v)),
                    TensorData::I64(v) => (
                        Dtype::I64,
                        Cow::Owned(v.iter().flat_map(|x| x.to_le_bytes()).collect()),
                    ),
                };
                (
                    name.clone(),
                    OutTensor {
                        dtype,
                        shape: t.shape.clone(),
                        bytes,
                    },
                )
            })
            .collect();
        writer::write(path, &out, metadata)?;
        Ok(())
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(|s| s.as_str())
    }

    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.tensors.get(name)
    }

    /// Mutable f32 values of a tensor (to patch a synthetic checkpoint, e.g. the EOS
    /// recording's bias tweak).
    pub fn f32_mut(&mut self, name: &str) -> Option<&mut [f32]> {
        match self.tensors.get_mut(name) {
            Some(Tensor {
                data: TensorData::F32(v),
                ..
            }) => Some(v),
            _ => None,
        }
    }

    /// The f32 values of a validated tensor.
    pub fn f32(&self, name: &str) -> Result<&[f32]> {
        match self.tensors.get(name) {
            Some(Tensor {
                data: TensorData::F32(v),
                ..
            }) => Ok(v),
            _ => Err(no_such_tensor(name, "float")),
        }
    }

    /// Moves a tensor's f32 values out (the model takes ownership while building).
    pub(crate) fn take_f32(&mut self, name: &str) -> Result<Vec<f32>> {
        match self.tensors.remove(name) {
            Some(Tensor {
                data: TensorData::F32(v),
                ..
            }) => Ok(v),
            _ => Err(no_such_tensor(name, "float")),
        }
    }

    pub fn ints(&self, name: &str) -> Result<&[i64]> {
        match self.tensors.get(name) {
            Some(Tensor {
                data: TensorData::I64(v),
                ..
            }) => Ok(v),
            _ => Err(no_such_tensor(name, "int64")),
        }
    }
}

/// The little-endian bytes of `v`, borrowed where the CPU is little-endian.
fn le_bytes_f32(v: &[f32]) -> Cow<'_, [u8]> {
    #[cfg(target_endian = "little")]
    {
        // SAFETY: f32 has no padding and every bit pattern is a valid u8 sequence; the
        // slice covers exactly the 4·len bytes of `v`, which outlives the borrow.
        Cow::Borrowed(unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), 4 * v.len()) })
    }
    #[cfg(not(target_endian = "little"))]
    {
        Cow::Owned(v.iter().flat_map(|x| x.to_le_bytes()).collect())
    }
}

/// The error of a tensor that is absent or not of the kind asked for.
fn no_such_tensor(name: &str, kind: &str) -> MagpieError {
    MagpieError::BadTensor {
        name: name.into(),
        reason: format!("no such {kind} tensor"),
    }
}
