//! The decoder and quantizer part of NanoCodec's torch state dict: every key with
//! its shape and dtype ([`specs`]), an in-memory [`StateDict`], reading one from a
//! safetensors file in that layout and writing one back, and the oracle's
//! random-weight recipe ([`synthesize`], `codec_init_rule` of the oracle).
//!
//! The full `AudioCodecModel` state dict also holds the encoder and training-loss
//! buffers; they are not needed for decoding and are ignored when present.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use rill_checkpoint::writer::Tensor;
use rill_checkpoint::{synth, Checkpoint, Dtype};

use crate::config::{
    alpha_key, conv_keys, res_block_stem, Config, CODEBOOKS, FSQ_BASES, FSQ_LEVELS,
};
use crate::error::{CodecError, Problem};

/// Element type of a state-dict entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    F32,
    I32,
}

/// How the oracle initialises an entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    /// The portable uniform recipe with this mean and standard deviation.
    Uniform { mean: f64, std: f64 },
    /// An FSQ buffer: fixed integers from the configuration.
    Fixed(&'static [u32; 4]),
}

/// One state-dict entry the decoder needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub name: String,
    pub shape: Vec<usize>,
    pub kind: Kind,
    pub init: Init,
}

impl Spec {
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
}

/// The oracle's `codec_init_rule` for a float entry.
fn init_for(name: &str) -> Init {
    let (mean, std) = if name.ends_with("parametrizations.weight.original0") {
        if name.starts_with("audio_decoder.post_conv") {
            (0.4, 0.05)
        } else {
            (1.0, 0.1)
        }
    } else if name.ends_with("parametrizations.weight.original1") {
        (0.0, 1.0)
    } else if name.ends_with("snake_act.alpha") {
        (1.0, 0.2)
    } else {
        (0.0, 0.02) // biases
    };
    Init::Uniform { mean, std }
}

fn push_conv(v: &mut Vec<Spec>, stem: &str, bias: usize, dim0: usize, shape: [usize; 3]) {
    let [b, g, w] = conv_keys(stem);
    for (name, shape) in [(b, vec![bias]), (g, vec![dim0, 1, 1]), (w, shape.to_vec())] {
        let init = init_for(&name);
        v.push(Spec {
            name,
            shape,
            kind: Kind::F32,
            init,
        });
    }
}

fn push_alpha(v: &mut Vec<Spec>, stem: &str, channels: usize) {
    let name = alpha_key(stem);
    let init = init_for(&name);
    v.push(Spec {
        name,
        shape: vec![1, channels / 2, 1],
        kind: Kind::F32,
        init,
    });
}

/// Every decoder and quantizer entry of the state dict, in torch's order.
pub fn specs(cfg: &Config) -> Vec<Spec> {
    let mut v = Vec::new();
    let c0 = cfg.base_channels;
    push_conv(
        &mut v,
        "audio_decoder.pre_conv",
        c0,
        c0,
        [c0, cfg.input_dim, cfg.in_kernel],
    );
    for i in 0..cfg.up_sample_rates.len() {
        push_alpha(
            &mut v,
            &format!("audio_decoder.activations.{i}"),
            cfg.stage_in(i),
        );
    }
    for (i, &r) in cfg.up_sample_rates.iter().enumerate() {
        let (cin, cout) = (cfg.stage_in(i), cfg.stage_out(i));
        push_conv(
            &mut v,
            &format!("audio_decoder.up_sample_conv_layers.{i}"),
            cout,
            cin,
            [cin, 1, 2 * r],
        );
    }
    for i in 0..cfg.up_sample_rates.len() {
        let c = cfg.stage_out(i);
        for (j, &k) in cfg.resblock_kernels.iter().enumerate() {
            for m in 0..cfg.resblock_dilations.len() {
                let stem = res_block_stem(i, j, m);
                push_alpha(&mut v, &format!("{stem}.input_activation"), c);
                push_alpha(&mut v, &format!("{stem}.skip_activation"), c);
                push_conv(&mut v, &format!("{stem}.input_conv"), c, c, [c, c, k]);
                push_conv(&mut v, &format!("{stem}.skip_conv"), c, c, [c, c, k]);
            }
        }
    }
    let cf = cfg.final_channels();
    push_alpha(&mut v, "audio_decoder.post_activation", cf);
    push_conv(
        &mut v,
        "audio_decoder.post_conv",
        1,
        1,
        [1, cf, cfg.out_kernel],
    );
    for g in 0..CODEBOOKS {
        for (leaf, values) in [("dim_base_index", &FSQ_BASES), ("num_levels", &FSQ_LEVELS)] {
            v.push(Spec {
                name: format!("vector_quantizer.fsqs.{g}.{leaf}"),
                shape: vec![1, 4, 1],
                kind: Kind::I32,
                init: Init::Fixed(values),
            });
        }
    }
    v
}

/// Values of one state-dict entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    F32(Vec<f32>),
    I32(Vec<i32>),
}

impl Values {
    fn kind(&self) -> Kind {
        match self {
            Values::F32(_) => Kind::F32,
            Values::I32(_) => Kind::I32,
        }
    }

    fn len(&self) -> usize {
        match self {
            Values::F32(v) => v.len(),
            Values::I32(v) => v.len(),
        }
    }

    /// The raw little-endian bytes (what the manifest's sha256 covers).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            Values::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Values::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }
}

/// Named tensors in the torch state-dict layout (what every loader produces).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateDict {
    pub tensors: BTreeMap<String, (Vec<usize>, Values)>,
}

impl StateDict {
    pub fn insert(&mut self, name: impl Into<String>, shape: Vec<usize>, values: Values) {
        self.tensors.insert(name.into(), (shape, values));
    }

    pub fn get(&self, name: &str) -> Option<&(Vec<usize>, Values)> {
        self.tensors.get(name)
    }

    /// Every problem of this state dict against `specs(cfg)`: presence, shape,
    /// dtype, element count, the FSQ buffers' values and finite floats.
    pub fn problems(&self, cfg: &Config) -> Vec<Problem> {
        let mut out = Vec::new();
        for s in specs(cfg) {
            let Some((shape, values)) = self.tensors.get(&s.name) else {
                out.push(Problem::Missing {
                    name: s.name,
                    expected: s.shape,
                });
                continue;
            };
            if *shape != s.shape {
                out.push(Problem::WrongShape {
                    name: s.name,
                    expected: s.shape,
                    found: shape.clone(),
                });
                continue;
            }
            if values.kind() != s.kind {
                let name = |k: Kind| if k == Kind::F32 { "F32" } else { "I32" };
                out.push(Problem::WrongDtype {
                    name: s.name,
                    expected: name(s.kind),
                    found: name(values.kind()).to_string(),
                });
                continue;
            }
            if values.len() != s.numel() {
                let numel = s.numel();
                out.push(Problem::BadValue {
                    name: s.name,
                    reason: format!(
                        "shape {:?} needs {numel} values, found {}",
                        s.shape,
                        values.len()
                    ),
                });
                continue;
            }
            match (values, s.init) {
                (Values::I32(v), Init::Fixed(want))
                    if v.iter()
                        .zip(want.iter())
                        .any(|(&a, &b)| a as i64 != b as i64) =>
                {
                    out.push(Problem::BadValue {
                        name: s.name,
                        reason: format!(
                            "holds {v:?}; only the 21.5 fps codec's FSQ {want:?} is supported"
                        ),
                    });
                }
                (Values::F32(v), _) => {
                    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
                        out.push(Problem::BadValue {
                            name: s.name,
                            reason: format!("value {i} is {}; weights must be finite", v[i]),
                        });
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Reads the entries of `specs(cfg)` from a safetensors file in the torch
    /// state-dict layout (floats as F32, F16 or BF16; the FSQ buffers as I32 or
    /// I64). Every problem is reported at once; other tensors are ignored.
    pub fn read_safetensors(path: &Path, cfg: &Config) -> Result<StateDict, CodecError> {
        let ckpt = Checkpoint::open(path)?;
        let mut sd = StateDict::default();
        let mut problems = Vec::new();
        for s in specs(cfg) {
            let Ok(t) = ckpt.tensor(&s.name) else {
                problems.push(Problem::Missing {
                    name: s.name,
                    expected: s.shape,
                });
                continue;
            };
            if t.shape != s.shape.as_slice() {
                problems.push(Problem::WrongShape {
                    name: s.name,
                    expected: s.shape,
                    found: t.shape.to_vec(),
                });
                continue;
            }
            let values = match (s.kind, t.dtype) {
                (Kind::F32, Dtype::F32 | Dtype::F16 | Dtype::BF16) => {
                    t.to_f32().map(Values::F32).ok()
                }
                (Kind::I32, Dtype::I32) => Some(Values::I32(
                    t.bytes
                        .chunks_exact(4)
                        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .collect(),
                )),
                (Kind::I32, Dtype::I64) => Some(Values::I32(
                    t.bytes
                        .chunks_exact(8)
                        .map(|c| {
                            let v = i64::from_le_bytes([
                                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
                            ]);
                            i32::try_from(v).unwrap_or(i32::MIN)
                        })
                        .collect(),
                )),
                _ => None,
            };
            match values {
                Some(v) => sd.insert(s.name, s.shape, v),
                None => problems.push(Problem::WrongDtype {
                    name: s.name,
                    expected: if s.kind == Kind::F32 {
                        "F32 (or F16, BF16)"
                    } else {
                        "I32 (or I64)"
                    },
                    found: format!("{:?}", t.dtype),
                }),
            }
        }
        problems.extend(
            sd.problems(cfg)
                .into_iter()
                .filter(|p| !matches!(p, Problem::Missing { .. })),
        );
        if problems.is_empty() {
            Ok(sd)
        } else {
            Err(CodecError::Invalid {
                source_name: path.display().to_string(),
                problems,
            })
        }
    }

    /// Writes the entries of `specs(cfg)` as a safetensors file in the state-dict
    /// layout (F32 weights, I32 FSQ buffers), atomically.
    pub fn write_safetensors(
        &self,
        path: &Path,
        cfg: &Config,
        metadata: HashMap<String, String>,
    ) -> Result<(), CodecError> {
        let problems = self.problems(cfg);
        if !problems.is_empty() {
            return Err(CodecError::Invalid {
                source_name: "the state dict to write".into(),
                problems,
            });
        }
        let tensors: Vec<(String, Tensor<'static>)> = specs(cfg)
            .into_iter()
            .filter_map(|s| {
                let (shape, values) = self.tensors.get(&s.name)?;
                let dtype = if s.kind == Kind::F32 {
                    Dtype::F32
                } else {
                    Dtype::I32
                };
                let bytes = std::borrow::Cow::Owned(values.to_le_bytes());
                Some((
                    s.name,
                    Tensor {
                        dtype,
                        shape: shape.clone(),
                        bytes,
                    },
                ))
            })
            .collect();
        rill_checkpoint::writer::write(path, &tensors, metadata).map_err(|e| CodecError::Write {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
    }
}

/// The random-weight state dict of the oracle for weights seed `seed`
/// (`magpie_common.codec_init_rule` + `portable_init`), bit-exact.
pub fn synthesize(cfg: &Config, seed: u64) -> StateDict {
    let mut sd = StateDict::default();
    for s in specs(cfg) {
        let values = match s.init {
            Init::Uniform { mean, std } => {
                let mut v = vec![0f32; s.numel()];
                synth::fill_values_parallel(synth::tensor_key(seed, &s.name), 0, mean, std, &mut v);
                Values::F32(v)
            }
            Init::Fixed(v) => Values::I32(v.iter().map(|&x| x as i32).collect()),
        };
        sd.insert(s.name, s.shape, values);
    }
    sd
}

/// Writes the random-weight NanoCodec of weights seed `seed` to `path` (what
/// `rill synth-checkpoint --model nanocodec` calls).
pub fn write_synthetic(path: &Path, seed: u64) -> Result<(), CodecError> {
    let cfg = Config::nanocodec_22khz();
    let meta = HashMap::from([
        (
            "format".to_string(),
            "NanoCodec 22kHz decoder, torch state-dict layout".to_string(),
        ),
        (
            "model".to_string(),
            "nanocodec-22khz-1.89kbps-21.5fps (random)".to_string(),
        ),
        ("weights_seed".to_string(), seed.to_string()),
        (
            "init".to_string(),
            "portable_init v1 (fnv1a64 + splitmix64 uniform), codec_init_rule".to_string(),
        ),
    ]);
    synthesize(&cfg, seed).write_safetensors(path, &cfg, meta)
}
