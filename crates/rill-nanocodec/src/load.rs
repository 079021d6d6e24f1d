//! NanoCodec from the files users have (spec §2.3, §2.4): NeMo's `.nemo`
//! ([`load_nemo`]: the torch state dict with weight-norm parametrizations, folded
//! here) and NVIDIA's decoder GGUF ([`load_gguf`], NeMo-Speech.cpp
//! `conversion/codec.py`: weight norm already folded, short names `dec.pre.w/b`,
//! `dec.up.{i}.w/b`, `dec.act.{i}.alpha[_inv]`, `dec.res.{i}.{j}.{m}.{ia|sa}.alpha[_inv]`,
//! `dec.res.{i}.{j}.{m}.{ic|sc}.w/b`, `dec.post.w/b`, `dec.post_act.alpha[_inv]`,
//! biases `(1, C, 1)`, grouped transposed convs expanded to dense `(C_in, C_out, K)`,
//! the FSQ codebook `q.fsq.codebook`). Every problem is reported at once.

use std::path::Path;

use rill_checkpoint::gguf::{Gguf, MetaValue};
use rill_checkpoint::nemo::Nemo;
use serde_json::Value;

use crate::config::{alpha_key, res_block_stem, Config};
use crate::error::{CodecError, Problem};
use crate::state_dict::{specs, Kind, StateDict, Values};
use crate::walk::{read_decoder, Layer, ResPart, Source, WeightBias};
use crate::weights::{Conv1d, HalfSnake, Weights};
use crate::{CODEBOOKS, CODEBOOK_SIZE, LATENT_DIM, SAMPLES_PER_FRAME, SAMPLE_RATE};

/// The `general.architecture` of NeMo-Speech.cpp's codec GGUF.
pub const ARCHITECTURE: &str = "nemo-nano-codec";
const TARGET: &str = "nemo.collections.tts.models.audio_codec.AudioCodecModel";
const DECODER: &str = "nemo.collections.tts.modules.audio_codec_modules.CausalHiFiGANDecoder";
const QUANTIZER: &str =
    "nemo.collections.tts.modules.audio_codec_modules.GroupFiniteScalarQuantizer";

fn bad(p: &mut Vec<Problem>, name: &str, reason: String) {
    p.push(Problem::BadValue {
        name: name.to_string(),
        reason,
    });
}

fn get<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |cur, k| cur.get(k))
}

/// A setting `name` of a file's config (`found`, `None` where absent): `default`
/// where absent; where `read` rejects it, a problem (`rejected` says what the value
/// is not) and `default`.
fn setting<V: ?Sized, T>(
    found: Option<&V>,
    read: impl FnOnce(&V) -> Option<T>,
    rejected: impl FnOnce(&V) -> String,
    default: T,
    name: &str,
    p: &mut Vec<Problem>,
) -> T {
    match found {
        None => default,
        Some(v) => read(v).unwrap_or_else(|| {
            bad(p, name, rejected(v));
            default
        }),
    }
}

/// Every item of `items` as a `usize` (`None` if there is no list, or an item is
/// not a non-negative integer).
fn usizes<V, N: TryInto<usize>>(
    items: Option<&[V]>,
    int: impl Fn(&V) -> Option<N>,
) -> Option<Vec<usize>> {
    items?.iter().map(|x| int(x)?.try_into().ok()).collect()
}

fn uint_at(cfg: &Value, path: &str, default: usize, p: &mut Vec<Problem>) -> usize {
    setting(
        get(cfg, path),
        |v| v.as_u64()?.try_into().ok(),
        |v| format!("config value {v} is not a non-negative integer"),
        default,
        path,
        p,
    )
}

fn list_at(cfg: &Value, path: &str, default: &[usize], p: &mut Vec<Problem>) -> Vec<usize> {
    setting(
        get(cfg, path),
        |v| usizes(v.as_array().map(Vec::as_slice), Value::as_u64),
        |v| format!("config value {v} is not a list of integers"),
        default.to_vec(),
        path,
        p,
    )
}

/// The decoder [`Config`] of an `AudioCodecModel` config (NeMo defaults where a key
/// is absent), with a problem for everything rill does not implement.
pub fn config_from_json(cfg: &Value, p: &mut Vec<Problem>) -> Config {
    let text = |path: &str| get(cfg, path).and_then(|v| v.as_str());
    for (path, want) in [
        ("target", TARGET),
        ("audio_decoder._target_", DECODER),
        ("vector_quantizer._target_", QUANTIZER),
        ("audio_decoder.activation", "half_snake"),
        ("audio_decoder.output_activation", "clamp"),
        ("audio_decoder.pad_mode", "zeros"),
    ] {
        if let Some(found) = get(cfg, path) {
            if text(path) != Some(want) {
                bad(
                    p,
                    path,
                    format!("config value {found}; rill implements {want}"),
                );
            }
        }
    }
    if let Some(v) = get(cfg, "audio_decoder.n_groups_equal_to_out_channels") {
        if v.as_bool() != Some(true) {
            bad(
                p,
                "audio_decoder.n_groups_equal_to_out_channels",
                format!("config value {v}; rill implements the grouped up-sampling (true)"),
            );
        }
    }
    for (path, want) in [
        ("sample_rate", SAMPLE_RATE as usize),
        ("samples_per_frame", SAMPLES_PER_FRAME),
        ("vector_quantizer.num_groups", CODEBOOKS),
    ] {
        let found = uint_at(cfg, path, want, p);
        if found != want {
            bad(
                p,
                path,
                format!("config value {found}; rill implements {want}"),
            );
        }
    }
    let levels = list_at(
        cfg,
        "vector_quantizer.num_levels_per_group",
        &[8, 7, 6, 6],
        p,
    );
    if levels != [8, 7, 6, 6] {
        bad(
            p,
            "vector_quantizer.num_levels_per_group",
            format!("{levels:?}; rill implements the 21.5 fps codec's [8, 7, 6, 6]"),
        );
    }
    let d = Config::nanocodec_22khz();
    Config {
        input_dim: uint_at(cfg, "audio_decoder.input_dim", d.input_dim, p),
        base_channels: uint_at(cfg, "audio_decoder.base_channels", d.base_channels, p),
        up_sample_rates: list_at(cfg, "audio_decoder.up_sample_rates", &d.up_sample_rates, p),
        in_kernel: uint_at(cfg, "audio_decoder.in_kernel_size", d.in_kernel, p),
        out_kernel: uint_at(cfg, "audio_decoder.out_kernel_size", d.out_kernel, p),
        resblock_kernels: list_at(
            cfg,
            "audio_decoder.resblock_kernel_sizes",
            &d.resblock_kernels,
            p,
        ),
        resblock_dilations: list_at(
            cfg,
            "audio_decoder.resblock_dilation_sizes",
            &d.resblock_dilations,
            p,
        ),
    }
}

/// Checks a config before anything is sized from it (a hostile config must not
/// make the loaders allocate by its numbers): [`Weights::problems`]' own rules.
fn config_problems(cfg: &Config) -> Vec<Problem> {
    let probe = Weights {
        config: cfg.clone(),
        pre_conv: Conv1d::default(),
        stages: Vec::new(),
        post_activation: HalfSnake::new(0, Vec::new()),
        post_conv: Conv1d::default(),
    };
    probe
        .problems()
        .into_iter()
        .filter(|p| matches!(p, Problem::BadValue { name, .. } if name == "config"))
        .collect()
}

fn invalid(path: &Path, problems: Vec<Problem>) -> CodecError {
    CodecError::Invalid {
        source_name: path.display().to_string(),
        problems,
    }
}

/// Reads and folds the decoder of a NanoCodec `.nemo` (encoder, discriminator and
/// loss buffers are ignored).
pub fn load_nemo(path: impl AsRef<Path>) -> Result<Weights, CodecError> {
    from_nemo(&Nemo::open(path)?)
}

/// [`load_nemo`] for an archive already opened.
pub fn from_nemo(nemo: &Nemo) -> Result<Weights, CodecError> {
    let mut p = Vec::new();
    let cfg = config_from_json(&nemo.config_json()?, &mut p);
    p.extend(config_problems(&cfg));
    if !p.is_empty() {
        return Err(invalid(nemo.path(), p));
    }
    let raw = nemo.state_dict()?;
    let mut sd = StateDict::default();
    for s in specs(&cfg) {
        let Ok(t) = raw.tensor(&s.name) else {
            continue; // StateDict::problems names it
        };
        let values = match (s.kind, t.dtype.is_float()) {
            (Kind::F32, true) => t.to_f32().map(Values::F32),
            (Kind::I32, false) => match t.to_i64() {
                Ok(v) => match v.into_iter().map(i32::try_from).collect() {
                    Ok(v) => Ok(Values::I32(v)),
                    Err(_) => {
                        bad(&mut p, &s.name, "holds a value outside i32".into());
                        continue;
                    }
                },
                Err(e) => Err(e),
            },
            (_, is_float) => {
                p.push(Problem::WrongDtype {
                    name: s.name.clone(),
                    expected: if s.kind == Kind::F32 {
                        "a float type"
                    } else {
                        "an integer type"
                    },
                    found: format!("{:?}{}", t.dtype, if is_float { "" } else { " (integer)" }),
                });
                continue;
            }
        };
        match values {
            Ok(v) => sd.insert(s.name.clone(), t.shape.clone(), v),
            Err(e) => bad(&mut p, &s.name, e.to_string()),
        }
    }
    p.extend(sd.problems(&cfg));
    if !p.is_empty() {
        return Err(invalid(nemo.path(), p));
    }
    Weights::from_state_dict(&sd, &cfg).map_err(|e| match e {
        CodecError::Invalid { problems, .. } => invalid(nemo.path(), problems),
        other => other,
    })
}

/// Reads a NanoCodec decoder GGUF (folded weights, f16 or f32).
pub fn load_gguf(path: impl AsRef<Path>) -> Result<Weights, CodecError> {
    from_gguf(&Gguf::open(path)?)
}

/// GGUF tensors by short name, each problem recorded once.
struct Reader<'a> {
    g: &'a Gguf,
    p: Vec<Problem>,
}

impl Reader<'_> {
    fn floats(&mut self, name: &str, shape: &[usize]) -> Vec<f32> {
        match self.g.tensor(name) {
            Err(_) => self.p.push(Problem::Missing {
                name: name.into(),
                expected: shape.to_vec(),
            }),
            Ok(t) if t.shape != shape => self.p.push(Problem::WrongShape {
                name: name.into(),
                expected: shape.to_vec(),
                found: t.shape.clone(),
            }),
            Ok(t) => match t.to_f32() {
                Ok(v) => return v,
                Err(e) => bad(&mut self.p, name, e.to_string()),
            },
        }
        Vec::new()
    }

    /// `q.fsq.codebook` `(8, 2016, 4)` must be the FSQ grid rill computes itself.
    fn check_codebook(&mut self) {
        let name = "q.fsq.codebook";
        if self.g.info(name).is_none() {
            return;
        }
        let dims = LATENT_DIM / CODEBOOKS;
        let v = self.floats(name, &[CODEBOOKS, CODEBOOK_SIZE as usize, dims]);
        let (levels, bases) = (crate::config::FSQ_LEVELS, crate::config::FSQ_BASES);
        for (i, x) in v.iter().enumerate() {
            let (code, d) = ((i / dims) % CODEBOOK_SIZE as usize, i % dims);
            let half = (levels[d] / 2) as f32;
            let want = ((code as u32 / bases[d]) % levels[d]) as f32 - half;
            if *x != want / half {
                bad(
                    &mut self.p,
                    name,
                    format!("entry {i} is {x}, not the FSQ grid value {}", want / half),
                );
                return;
            }
        }
    }
}

/// The GGUF short name of a decoder layer (NeMo-Speech.cpp's names): `dec.pre`,
/// `dec.act.{i}`, `dec.up.{i}`, `dec.res.{i}.{j}.{m}.{ia|ic|sa|sc}`,
/// `dec.post_act`, `dec.post`.
fn gguf_stem(at: Layer) -> String {
    match at {
        Layer::PreConv => "dec.pre".into(),
        Layer::Activation(i) => format!("dec.act.{i}"),
        Layer::Up(i) => format!("dec.up.{i}"),
        Layer::Res(b, part) => {
            let leaf = match part {
                ResPart::InputActivation => "ia",
                ResPart::InputConv => "ic",
                ResPart::SkipActivation => "sa",
                ResPart::SkipConv => "sc",
            };
            format!("dec.res.{}.{}.{}.{leaf}", b.stage, b.branch, b.block)
        }
        Layer::PostActivation => "dec.post_act".into(),
        Layer::PostConv => "dec.post".into(),
    }
}

/// The folded tensors of a GGUF, read as they are.
impl Source for Reader<'_> {
    fn stem(&self, at: Layer) -> String {
        gguf_stem(at)
    }

    fn conv(&mut self, stem: &str, [cout, cin, kernel]: [usize; 3]) -> WeightBias {
        (
            self.floats(&format!("{stem}.w"), &[cout, cin, kernel]),
            self.floats(&format!("{stem}.b"), &[1, cout, 1]),
        )
    }

    /// Dense `(C_in, C_out, K)` back to the grouped `(C_in, 1, K)` (groups = C_out);
    /// an entry off the group diagonal means the file is not a grouped conv.
    fn up(&mut self, stem: &str, [cin, cout, k]: [usize; 3]) -> WeightBias {
        let dense = self.floats(&format!("{stem}.w"), &[cin, cout, k]);
        let mut weight = Vec::with_capacity(dense.len() / cout.max(1));
        if !dense.is_empty() {
            let per = cin / cout; // inputs per group; cin = 2·cout (checked by the config)
            for (ci, row) in dense.chunks_exact(cout * k).enumerate() {
                let group = ci / per;
                for (co, taps) in row.chunks_exact(k).enumerate() {
                    if co == group {
                        weight.extend_from_slice(taps);
                    } else if taps.iter().any(|&x| x != 0.0) {
                        bad(
                            &mut self.p,
                            &format!("{stem}.w"),
                            format!("input {ci} feeds output {co} outside its group: not NanoCodec's grouped up-sampling"),
                        );
                        return (Vec::new(), Vec::new());
                    }
                }
            }
        }
        (weight, self.floats(&format!("{stem}.b"), &[1, cout, 1]))
    }

    /// `alpha` `(1, C/2, 1)`; `alpha_inv`, when present, must be `1/(alpha + 1e-9)`.
    fn snake(&mut self, stem: &str, channels: usize) -> HalfSnake {
        let shape = [1, channels / 2, 1];
        let hs = HalfSnake::new(channels, self.floats(&format!("{stem}.alpha"), &shape));
        let inv_name = format!("{stem}.alpha_inv");
        if self.g.info(&inv_name).is_some() {
            let inv = self.floats(&inv_name, &shape);
            let off = inv
                .iter()
                .zip(&hs.alpha_inv)
                .any(|(&a, &b)| (a - b).abs() > 1e-6 * b.abs().max(1.0));
            if off {
                bad(
                    &mut self.p,
                    &inv_name,
                    "is not 1/(alpha + 1e-9) of the stored alpha".into(),
                );
            }
        }
        hs
    }
}

/// [`load_gguf`] for an already parsed file.
pub fn from_gguf(g: &Gguf) -> Result<Weights, CodecError> {
    let mut p = Vec::new();
    match g.get("general.architecture").and_then(|v| v.as_str()) {
        Some(ARCHITECTURE) => {}
        other => bad(
            &mut p,
            "general.architecture",
            format!(
                "is {other:?}, not \"{ARCHITECTURE}\" (is this NeMo-Speech.cpp's NanoCodec GGUF?)"
            ),
        ),
    }
    let json = match g.get("nano_codec.config_json").and_then(|v| v.as_str()) {
        Some(s) => serde_json::from_str::<Value>(s).unwrap_or_else(|_| {
            bad(&mut p, "nano_codec.config_json", "is not JSON".into());
            Value::Null
        }),
        None => Value::Null,
    };
    let cfg = if json.is_object() {
        config_from_json(&json, &mut p)
    } else {
        typed_config(g, &mut p)
    };
    p.extend(config_problems(&cfg));
    if !p.is_empty() {
        return Err(invalid(g.path(), p));
    }
    let mut r = Reader { g, p };
    let w = read_decoder(&cfg, &mut r);
    r.check_codebook();
    let mut p = r.p;
    if p.is_empty() {
        p = w.problems();
    }
    if !p.is_empty() {
        return Err(invalid(g.path(), p));
    }
    Ok(w)
}

/// The decoder config from the typed `nano_codec.*` keys (a file without `config_json`).
fn typed_config(g: &Gguf, p: &mut Vec<Problem>) -> Config {
    let d = Config::nanocodec_22khz();
    let int = |key: &str, default: usize, p: &mut Vec<Problem>| {
        setting(
            g.get(key),
            |v| v.as_i64()?.try_into().ok(),
            |v| format!("metadata {v:?} is not a non-negative integer"),
            default,
            key,
            p,
        )
    };
    let list = |key: &str, default: &[usize], p: &mut Vec<Problem>| {
        setting(
            g.get(key),
            |v| usizes(v.as_array(), MetaValue::as_i64),
            |v| format!("metadata {v:?} is not a list of integers"),
            default.to_vec(),
            key,
            p,
        )
    };
    Config {
        input_dim: int("nano_codec.decoder.input_dim", d.input_dim, p),
        base_channels: int("nano_codec.decoder.base_channels", d.base_channels, p),
        up_sample_rates: list("nano_codec.decoder.up_sample_rates", &d.up_sample_rates, p),
        in_kernel: int("nano_codec.decoder.in_kernel_size", d.in_kernel, p),
        out_kernel: int("nano_codec.decoder.out_kernel_size", d.out_kernel, p),
        resblock_kernels: list(
            "nano_codec.decoder.resblock_kernel_sizes",
            &d.resblock_kernels,
            p,
        ),
        resblock_dilations: list(
            "nano_codec.decoder.resblock_dilation_sizes",
            &d.resblock_dilations,
            p,
        ),
    }
}

/// State-dict names of the folded tensors in `w`, for tests and tools: (`name`, values)
/// with the weight under `<stem>.conv.weight` (torch layout, grouped for the
/// transposed convs), the bias under `<stem>.conv.bias`, alphas flat.
pub fn folded_tensors(w: &Weights) -> Vec<(String, &[f32])> {
    let mut out: Vec<(String, &[f32])> = Vec::new();
    out.push((
        "audio_decoder.pre_conv.conv.weight".into(),
        &w.pre_conv.weight,
    ));
    out.push(("audio_decoder.pre_conv.conv.bias".into(), &w.pre_conv.bias));
    for (i, s) in w.stages.iter().enumerate() {
        out.push((
            alpha_key(&format!("audio_decoder.activations.{i}")),
            &s.activation.alpha,
        ));
        let up = format!("audio_decoder.up_sample_conv_layers.{i}");
        out.push((format!("{up}.conv.weight"), &s.up.weight));
        out.push((format!("{up}.conv.bias"), &s.up.bias));
        for (j, chain) in s.res.iter().enumerate() {
            for (m, b) in chain.iter().enumerate() {
                let stem = res_block_stem(i, j, m);
                out.push((
                    alpha_key(&format!("{stem}.input_activation")),
                    &b.input_activation.alpha,
                ));
                out.push((
                    alpha_key(&format!("{stem}.skip_activation")),
                    &b.skip_activation.alpha,
                ));
                out.push((
                    format!("{stem}.input_conv.conv.weight"),
                    &b.input_conv.weight,
                ));
                out.push((format!("{stem}.input_conv.conv.bias"), &b.input_conv.bias));
                out.push((format!("{stem}.skip_conv.conv.weight"), &b.skip_conv.weight));
                out.push((format!("{stem}.skip_conv.conv.bias"), &b.skip_conv.bias));
            }
        }
    }
    out.push((
        alpha_key("audio_decoder.post_activation"),
        &w.post_activation.alpha,
    ));
    out.push((
        "audio_decoder.post_conv.conv.weight".into(),
        &w.post_conv.weight,
    ));
    out.push((
        "audio_decoder.post_conv.conv.bias".into(),
        &w.post_conv.bias,
    ));
    out
}
