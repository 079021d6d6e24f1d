//! A pickle reader for exactly what `torch.save` of a state dict emits; it runs
//! no code. Only these callables are known: `collections.OrderedDict`,
//! `torch._utils._rebuild_tensor_v2`, `torch._utils._rebuild_parameter`, and the
//! `torch.*Storage` types named in persistent ids. Any other global, opcode or
//! argument shape is an error naming it.
//!
//! Values are shared (`Rc`) and copied on write, so `BINGET`/`DUP` cost O(1); the
//! total copying is bounded ([`MAX_COPY_WORK`]) so a crafted pickle cannot make
//! the reader quadratic. (Copy-on-write means a memoised container mutated after
//! `BINPUT` is seen unmutated by a later `BINGET`; torch never relies on that.)

use std::collections::HashMap;
use std::rc::Rc;

use crate::bounded::{Bounded, Short};
use crate::raw::ElemType;

/// Most container elements the reader copies in total, per input byte.
const MAX_COPY_WORK_PER_BYTE: usize = 8;
/// Floor of the copy budget for tiny pickles.
const MAX_COPY_WORK: usize = 1 << 20;
/// Deepest nesting of `MARK`s.
const MAX_MARKS: usize = 4096;

/// A tensor as `_rebuild_tensor_v2` describes it (sizes and offsets in elements).
#[derive(Debug, Clone, PartialEq)]
pub struct TensorMeta {
    pub dtype: ElemType,
    /// The storage's record name (`data/<key>` in the zip).
    pub storage_key: String,
    pub storage_numel: usize,
    pub offset: usize,
    pub shape: Vec<usize>,
    pub stride: Vec<usize>,
}

/// A pickled value (the subset torch uses).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    Tuple(Vec<Rc<Value>>),
    List(Vec<Rc<Value>>),
    /// Dicts and `OrderedDict`s, in insertion order.
    Dict(Vec<(Rc<Value>, Rc<Value>)>),
    /// A permitted global, not yet called.
    Global(Callable),
    /// A persistent id `('storage', torch.XStorage, key, location, numel)`.
    Storage {
        dtype: ElemType,
        key: String,
        numel: usize,
    },
    Tensor(TensorMeta),
}

/// The globals the reader knows.
#[derive(Debug, Clone, PartialEq)]
pub enum Callable {
    OrderedDict,
    RebuildTensorV2,
    RebuildParameter,
    StorageType(ElemType),
}

fn global(module: &str, name: &str) -> Result<Callable, String> {
    Ok(match (module, name) {
        ("collections", "OrderedDict") => Callable::OrderedDict,
        ("torch._utils", "_rebuild_tensor_v2") => Callable::RebuildTensorV2,
        ("torch._utils", "_rebuild_parameter") => Callable::RebuildParameter,
        ("torch", storage) => Callable::StorageType(match storage {
            "FloatStorage" => ElemType::F32,
            "HalfStorage" => ElemType::F16,
            "BFloat16Storage" => ElemType::BF16,
            "DoubleStorage" => ElemType::F64,
            "LongStorage" => ElemType::I64,
            "IntStorage" => ElemType::I32,
            "ShortStorage" => ElemType::I16,
            "CharStorage" => ElemType::I8,
            "ByteStorage" => ElemType::U8,
            "BoolStorage" => ElemType::Bool,
            _ => return Err(format!("refuses the global torch.{storage}")),
        }),
        _ => {
            return Err(format!(
                "refuses the global {module}.{name} (only torch state dicts of tensors are read)"
            ))
        }
    })
}

struct Vm<'a> {
    r: Bounded<'a>,
    stack: Vec<Rc<Value>>,
    marks: Vec<usize>,
    memo: HashMap<u32, Rc<Value>>,
    copy_budget: usize,
}

/// Runs `pickle` and returns the value `STOP` leaves on the stack.
pub fn load(pickle: &[u8]) -> Result<Rc<Value>, String> {
    let mut vm = Vm {
        r: Bounded::new(pickle),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        copy_budget: MAX_COPY_WORK.max(pickle.len().saturating_mul(MAX_COPY_WORK_PER_BYTE)),
    };
    vm.run()
}

impl<'a> Vm<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        self.r.take(n).map_err(truncated)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        self.r.array().map_err(truncated)
    }
    fn u8(&mut self) -> Result<u8, String> {
        self.r.u8().map_err(truncated)
    }
    fn u16(&mut self) -> Result<u16, String> {
        self.r.u16().map_err(truncated)
    }
    fn u32(&mut self) -> Result<u32, String> {
        self.r.u32().map_err(truncated)
    }
    fn u64(&mut self) -> Result<u64, String> {
        self.r.u64().map_err(truncated)
    }
    fn line(&mut self) -> Result<&'a str, String> {
        let rest = self.r.rest();
        let n = rest
            .iter()
            .position(|&c| c == b'\n')
            .ok_or("truncated GLOBAL name")?;
        let s = std::str::from_utf8(&rest[..n]).map_err(|_| "GLOBAL name is not UTF-8")?;
        self.take(n + 1)?;
        Ok(s)
    }
    fn text(&mut self, n: usize) -> Result<Value, String> {
        let s = self.take(n)?;
        Ok(Value::Str(
            String::from_utf8(s.to_vec()).map_err(|_| "a string is not UTF-8")?,
        ))
    }
    fn pop(&mut self) -> Result<Rc<Value>, String> {
        if self.marks.last().is_some_and(|&m| m >= self.stack.len()) {
            return Err("pops past a MARK".into());
        }
        self.stack.pop().ok_or_else(|| "stack underflow".into())
    }
    fn pop_mark(&mut self) -> Result<Vec<Rc<Value>>, String> {
        let m = self.marks.pop().ok_or("no MARK to pop to")?;
        Ok(self.stack.split_off(m))
    }
    fn top_mut(&mut self) -> Result<&mut Value, String> {
        let min = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= min {
            return Err("stack underflow".into());
        }
        let top = self.stack.last_mut().ok_or("stack underflow")?;
        if Rc::strong_count(top) > 1 {
            let cost = match &**top {
                Value::List(v) | Value::Tuple(v) => v.len(),
                Value::Dict(d) => d.len(),
                _ => 1,
            };
            self.copy_budget = self
                .copy_budget
                .checked_sub(cost)
                .ok_or("copies more than the pickle's size allows (crafted input?)")?;
        }
        Ok(Rc::make_mut(top))
    }
    fn push(&mut self, v: Value) {
        self.stack.push(Rc::new(v));
    }
    fn put(&mut self, key: u32) -> Result<(), String> {
        let top = self.stack.last().ok_or("memoises an empty stack")?.clone();
        self.memo.insert(key, top);
        Ok(())
    }
    fn get(&mut self, key: u32) -> Result<(), String> {
        let v = self
            .memo
            .get(&key)
            .ok_or_else(|| format!("reads memo {key}, never stored"))?
            .clone();
        self.stack.push(v);
        Ok(())
    }

    fn run(&mut self) -> Result<Rc<Value>, String> {
        loop {
            let at = self.r.pos();
            let op = self.u8()?;
            match op {
                0x80 => {
                    let p = self.u8()?;
                    if p > 5 {
                        return Err(format!("pickle protocol {p}"));
                    }
                }
                0x95 => {
                    self.u64()?; // FRAME length: frames are only a buffering hint
                }
                b'.' => {
                    let v = self.pop()?;
                    if !self.stack.is_empty() || !self.marks.is_empty() {
                        return Err("STOP with values left on the stack".into());
                    }
                    return Ok(v);
                }
                b'(' => {
                    if self.marks.len() >= MAX_MARKS {
                        return Err("MARKs nested too deep".into());
                    }
                    self.marks.push(self.stack.len());
                }
                b'}' => self.push(Value::Dict(Vec::new())),
                b']' => self.push(Value::List(Vec::new())),
                b')' => self.push(Value::Tuple(Vec::new())),
                b'N' => self.push(Value::None),
                0x88 => self.push(Value::Bool(true)),
                0x89 => self.push(Value::Bool(false)),
                b'J' => {
                    let v = self.u32()? as i32;
                    self.push(Value::Int(v.into()))
                }
                b'K' => {
                    let v = self.u8()?;
                    self.push(Value::Int(v.into()))
                }
                b'M' => {
                    let v = self.u16()?;
                    self.push(Value::Int(v.into()))
                }
                0x8a => {
                    let n = self.u8()? as usize;
                    if n > 8 {
                        return Err(format!("LONG1 of {n} bytes does not fit in 64 bits"));
                    }
                    let s = self.take(n)?;
                    let mut buf = [if s.last().is_some_and(|&b| b & 0x80 != 0) { 0xff } else { 0 }; 8];
                    buf[..n].copy_from_slice(s);
                    self.push(Value::Int(i64::from_le_bytes(buf)))
                }
                b'G' => {
                    let v = f64::from_be_bytes(self.array()?);
                    self.push(Value::Float(v))
                }
                b'X' => {
                    let n = self.u32()? as usize;
                    let v = self.text(n)?;
                    self.push(v)
                }
                0x8c => {
                    let n = self.u8()? as usize;
                    let v = self.text(n)?;
                    self.push(v)
                }
                0x8d => {
                    let n = usize::try_from(self.u64()?).map_err(|_| "huge string")?;
                    let v = self.text(n)?;
                    self.push(v)
                }
                b'U' => {
                    let n = self.u8()? as usize;
                    let v = self.text(n)?;
                    self.push(v)
                }
                b'T' => {
                    let n = self.u32()? as usize;
                    let v = self.text(n)?;
                    self.push(v)
                }
                b'C' => {
                    let n = self.u8()? as usize;
                    let s = self.take(n)?.to_vec();
                    self.push(Value::Bytes(s))
                }
                b'B' => {
                    let n = self.u32()? as usize;
                    let s = self.take(n)?.to_vec();
                    self.push(Value::Bytes(s))
                }
                b'q' => {
                    let k = self.u8()?;
                    self.put(k.into())?
                }
                b'r' => {
                    let k = self.u32()?;
                    self.put(k)?
                }
                0x94 => {
                    let k = u32::try_from(self.memo.len()).map_err(|_| "memo overflow")?;
                    self.put(k)?
                }
                b'h' => {
                    let k = self.u8()?;
                    self.get(k.into())?
                }
                b'j' => {
                    let k = self.u32()?;
                    self.get(k)?
                }
                b'0' => {
                    self.pop()?;
                }
                b'2' => {
                    let v = self.stack.last().ok_or("DUP of an empty stack")?.clone();
                    self.stack.push(v)
                }
                b'c' => {
                    let module = self.line()?;
                    let name = self.line()?;
                    let g = global(module, name)?;
                    self.push(Value::Global(g))
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    match (&*module, &*name) {
                        (Value::Str(m), Value::Str(n)) => {
                            let g = global(m, n)?;
                            self.push(Value::Global(g))
                        }
                        _ => return Err("STACK_GLOBAL of non-strings".into()),
                    }
                }
                b't' => {
                    let items = self.pop_mark()?;
                    self.push(Value::Tuple(items))
                }
                0x85..=0x87 => {
                    let n = (op - 0x84) as usize;
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        items.push(self.pop()?);
                    }
                    items.reverse();
                    self.push(Value::Tuple(items))
                }
                b'a' => {
                    let v = self.pop()?;
                    match self.top_mut()? {
                        Value::List(l) => l.push(v),
                        _ => return Err("APPEND to a non-list".into()),
                    }
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    match self.top_mut()? {
                        Value::List(l) => l.extend(items),
                        _ => return Err("APPENDS to a non-list".into()),
                    }
                }
                b's' => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    match self.top_mut()? {
                        Value::Dict(d) => d.push((k, v)),
                        _ => return Err("SETITEM on a non-dict".into()),
                    }
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    if items.len() % 2 != 0 {
                        return Err("SETITEMS with an odd number of values".into());
                    }
                    let mut it = items.into_iter();
                    let mut pairs = Vec::new();
                    while let (Some(k), Some(v)) = (it.next(), it.next()) {
                        pairs.push((k, v));
                    }
                    match self.top_mut()? {
                        Value::Dict(d) => d.extend(pairs),
                        _ => return Err("SETITEMS on a non-dict".into()),
                    }
                }
                b'Q' => {
                    let pid = self.pop()?;
                    let v = persistent_load(&pid)?;
                    self.push(v)
                }
                b'R' => {
                    let args = self.pop()?;
                    let f = self.pop()?;
                    let v = reduce(&f, &args)?;
                    self.push(v)
                }
                b'b' => {
                    // OrderedDict state (torch's `_metadata` attribute): not needed.
                    let _state = self.pop()?;
                    match self.stack.last().map(|v| &**v) {
                        Some(Value::Dict(_)) => {}
                        _ => return Err("BUILD on something other than an OrderedDict".into()),
                    }
                }
                other => {
                    return Err(format!(
                        "unsupported pickle opcode 0x{other:02x} at byte {at} (not one torch.save emits for a state dict)"
                    ))
                }
            }
        }
    }
}

/// A read past the end of the pickle, in this reader's words.
fn truncated(e: Short) -> String {
    format!(
        "truncated: needs {} bytes at {} of {}",
        e.needed, e.at, e.len
    )
}

fn as_usize(v: &Value, what: &str) -> Result<usize, String> {
    match *v {
        Value::Int(i) => usize::try_from(i).map_err(|_| format!("{what} is {i}")),
        _ => Err(format!("{what} is not an integer")),
    }
}

fn usize_tuple(v: &Value, what: &str) -> Result<Vec<usize>, String> {
    match v {
        Value::Tuple(t) | Value::List(t) => t.iter().map(|x| as_usize(x, what)).collect(),
        _ => Err(format!("{what} is not a tuple")),
    }
}

fn persistent_load(pid: &Value) -> Result<Value, String> {
    let Value::Tuple(t) = pid else {
        return Err("persistent id is not a tuple".into());
    };
    match t.as_slice() {
        [tag, ty, key, _location, numel] if **tag == Value::Str("storage".into()) => {
            let Value::Global(Callable::StorageType(dtype)) = **ty else {
                return Err("persistent id names no torch storage type".into());
            };
            let Value::Str(key) = &**key else {
                return Err("storage key is not a string".into());
            };
            if key.is_empty() || !key.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
                return Err(format!("storage key {key:?} is not a plain record name"));
            }
            Ok(Value::Storage {
                dtype,
                key: key.clone(),
                numel: as_usize(numel, "storage size")?,
            })
        }
        _ => Err("persistent id is not ('storage', type, key, location, size)".into()),
    }
}

fn reduce(f: &Value, args: &Value) -> Result<Value, String> {
    let Value::Tuple(a) = args else {
        return Err("REDUCE arguments are not a tuple".into());
    };
    match f {
        Value::Global(Callable::OrderedDict) => match a.as_slice() {
            [] => Ok(Value::Dict(Vec::new())),
            [items] => match &**items {
                Value::List(l) => {
                    let mut d = Vec::with_capacity(l.len());
                    for p in l {
                        match &**p {
                            Value::List(kv) | Value::Tuple(kv) if kv.len() == 2 => {
                                d.push((kv[0].clone(), kv[1].clone()))
                            }
                            _ => return Err("OrderedDict item is not a pair".into()),
                        }
                    }
                    Ok(Value::Dict(d))
                }
                _ => Err("OrderedDict argument is not a list of pairs".into()),
            },
            _ => Err("OrderedDict with more than one argument".into()),
        },
        Value::Global(Callable::RebuildTensorV2) => {
            if !(6..=7).contains(&a.len()) {
                return Err(format!("_rebuild_tensor_v2 with {} arguments", a.len()));
            }
            let Value::Storage { dtype, key, numel } = &*a[0] else {
                return Err("_rebuild_tensor_v2 without a storage".into());
            };
            let shape = usize_tuple(&a[2], "tensor size")?;
            let stride = usize_tuple(&a[3], "tensor stride")?;
            if shape.len() != stride.len() {
                return Err("tensor size and stride differ in rank".into());
            }
            Ok(Value::Tensor(TensorMeta {
                dtype: *dtype,
                storage_key: key.clone(),
                storage_numel: *numel,
                offset: as_usize(&a[1], "storage offset")?,
                shape,
                stride,
            }))
        }
        Value::Global(Callable::RebuildParameter) => match a.first().map(|v| &**v) {
            Some(t @ Value::Tensor(_)) if a.len() == 3 => Ok(t.clone()),
            _ => Err("_rebuild_parameter of something other than a tensor".into()),
        },
        _ => Err("REDUCE of something that is not a permitted callable".into()),
    }
}
