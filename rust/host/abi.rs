//! tileport's C ABI for launching cuTile Rust kernels from a foreign runtime (written by this team).
//!
//! Every generated shim (`results/<op>/host/ffi.rs`) takes one [`TpTensor`] descriptor per array,
//! the kernel's scalars and constexprs, the launch grid, a device ordinal and the caller's CUDA
//! stream, and returns an [`i32`] status code (the `TP_*` constants below); it never unwinds a
//! panic across the C boundary. The memory behind a descriptor is borrowed: never copied, never
//! freed. The launch is asynchronous on the caller's stream, as a CUDA kernel launch is.
//!
//! `tp_last_error` copies the calling thread's last error message (UTF-8, NUL-terminated).

use std::cell::RefCell;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use cutile::tensor::Tensor;

/// Most array dimensions a descriptor carries (cuTile arrays in practice have <= 4).
pub const TP_MAX_DIMS: usize = 6;

pub const TP_OK: i32 = 0;
/// A descriptor pointer or a descriptor's data pointer is null.
pub const TP_ERR_NULL_POINTER: i32 = 1;
/// A descriptor's `ndim` differs from the kernel parameter's rank.
pub const TP_ERR_BAD_RANK: i32 = 2;
/// An unknown dtype code, one the kernel has no instance for, or arrays of different dtypes.
pub const TP_ERR_BAD_DTYPE: i32 = 3;
/// A negative or > i32 extent or stride, or an array larger than cutile's i32 byte count.
pub const TP_ERR_BAD_SHAPE: i32 = 4;
/// No CUDA driver / device, or the device's primary context cannot be retained.
pub const TP_ERR_CUDA_CONTEXT: i32 = 5;
/// cutile failed to JIT-compile or launch the kernel.
pub const TP_ERR_LAUNCH: i32 = 6;
/// A panic inside the shim or cutile (caught at the boundary).
pub const TP_ERR_PANIC: i32 = 7;
/// A launch grid dimension is zero or the device ordinal is out of range.
pub const TP_ERR_BAD_ARGUMENT: i32 = 8;

/// dtype codes of [`TpTensor::dtype`]: the variant element types f16/bf16/f32, then the element
/// types an array of its own dtype may have (tileport's `host.DTYPE_CODES`).
pub const TP_F16: i32 = 1;
pub const TP_BF16: i32 = 2;
pub const TP_F32: i32 = 3;
pub const TP_F64: i32 = 4;
pub const TP_I8: i32 = 5;
pub const TP_I16: i32 = 6;
pub const TP_I32: i32 = 7;
pub const TP_I64: i32 = 8;
pub const TP_U8: i32 = 9;
pub const TP_U16: i32 = 10;
pub const TP_U32: i32 = 11;
pub const TP_U64: i32 = 12;
pub const TP_BOOL: i32 = 13;
pub const TP_F8E4M3FN: i32 = 14;
pub const TP_F8E5M2: i32 = 15;

/// One array as the caller sees it: device pointer, rank, extents and strides in elements.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TpTensor {
    pub data: u64,
    pub ndim: i32,
    pub shape: [i64; TP_MAX_DIMS],
    pub strides: [i64; TP_MAX_DIMS],
    pub dtype: i32,
}

/// Error of a shim: a status code and a message naming the kernel argument at fault.
pub type TpError = (i32, String);

thread_local! {
    static LAST_ERROR: RefCell<String> = RefCell::new(String::new());
}

/// ABI version of this file; the Python wrapper refuses a library of another version.
#[no_mangle]
pub extern "C" fn tp_abi_version() -> i32 {
    1
}

/// Copy the calling thread's last error message into `buf` (at most `len` bytes, NUL-terminated).
/// Returns the message's full length in bytes.
///
/// # Safety
/// `buf` must be null or point to `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tp_last_error(buf: *mut u8, len: usize) -> usize {
    LAST_ERROR.with(|e| {
        let msg = e.borrow();
        let bytes = msg.as_bytes();
        if !buf.is_null() && len > 0 {
            let n = bytes.len().min(len - 1);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf, n);
            *buf.add(n) = 0;
        }
        bytes.len()
    })
}

fn set_last_error(msg: String) {
    LAST_ERROR.with(|e| *e.borrow_mut() = msg);
}

/// Run a shim body: clear the last error, catch panics, turn errors into status codes.
pub fn guard<F: FnOnce() -> Result<(), TpError>>(symbol: &str, body: F) -> i32 {
    set_last_error(String::new());
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(Ok(())) => TP_OK,
        Ok(Err((code, msg))) => {
            set_last_error(format!("{symbol}: {msg}"));
            code
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic payload".to_string());
            set_last_error(format!("{symbol}: panic: {what}"));
            TP_ERR_PANIC
        }
    }
}

/// Name of a dtype code (`"f16"`, `"bf16"`, `"f32"`, `"i32"`...), as the kernels' element-type
/// generic (the variant dtypes) and tileport's manifest codes.
pub fn dtype_name(code: i32) -> Option<&'static str> {
    match code {
        TP_F16 => Some("f16"),
        TP_BF16 => Some("bf16"),
        TP_F32 => Some("f32"),
        TP_F64 => Some("f64"),
        TP_I8 => Some("i8"),
        TP_I16 => Some("i16"),
        TP_I32 => Some("i32"),
        TP_I64 => Some("i64"),
        TP_U8 => Some("u8"),
        TP_U16 => Some("u16"),
        TP_U32 => Some("u32"),
        TP_U64 => Some("u64"),
        TP_BOOL => Some("bool"),
        TP_F8E4M3FN => Some("f8e4m3fn"),
        TP_F8E5M2 => Some("f8e5m2"),
        _ => None,
    }
}

fn elem_bytes(code: i32) -> i64 {
    match code {
        TP_I8 | TP_U8 | TP_BOOL | TP_F8E4M3FN | TP_F8E5M2 => 1,
        TP_F16 | TP_BF16 | TP_I16 | TP_U16 => 2,
        TP_F64 | TP_I64 | TP_U64 => 8,
        _ => 4,
    }
}

/// An array of its own dtype (an f32 Rstd beside f16 data): its descriptor must have `code`.
pub fn expect_dtype(name: &str, d: &TpTensor, code: i32) -> Result<(), TpError> {
    if d.dtype != code {
        return Err((TP_ERR_BAD_DTYPE, format!(
            "array '{name}' is {} but the kernel takes {} there",
            dtype_name(d.dtype).unwrap_or("?"), dtype_name(code).unwrap_or("?"))));
    }
    Ok(())
}

/// The variant dtype of a kernel whose arrays all have dtypes of their own: the first candidate
/// `(variant dtype code, [(array, descriptor, its dtype code there)])` every descriptor matches.
pub fn dtype_by_arrays(cands: &[(i32, &[(&str, &TpTensor, i32)])]) -> Result<i32, TpError> {
    for (code, arrays) in cands {
        if arrays.iter().all(|(_, d, c)| d.dtype == *c) {
            return Ok(*code);
        }
    }
    let got: Vec<String> = cands.first().map(|(_, a)| a.iter()
        .map(|(n, d, _)| format!("{n}: {}", dtype_name(d.dtype).unwrap_or("?"))).collect()).unwrap_or_default();
    Err((TP_ERR_BAD_DTYPE, format!("no instance of the kernel takes arrays of dtypes {}", got.join(", "))))
}

/// Check one descriptor against the kernel parameter `name` of rank `ndim`.
///
/// # Safety
/// `t` must be null or point to a readable [`TpTensor`].
pub unsafe fn check<'a>(t: *const TpTensor, name: &str, ndim: usize) -> Result<&'a TpTensor, TpError> {
    if t.is_null() {
        return Err((TP_ERR_NULL_POINTER, format!("array '{name}': descriptor pointer is null")));
    }
    let d = &*t;
    if d.data == 0 {
        return Err((TP_ERR_NULL_POINTER, format!("array '{name}': data pointer is null")));
    }
    if d.ndim < 0 || d.ndim as usize != ndim {
        return Err((TP_ERR_BAD_RANK, format!("array '{name}': rank {} but the kernel takes rank {ndim}", d.ndim)));
    }
    if dtype_name(d.dtype).is_none() {
        return Err((TP_ERR_BAD_DTYPE, format!("array '{name}': unknown dtype code {}", d.dtype)));
    }
    let mut bytes: i64 = elem_bytes(d.dtype);
    for i in 0..ndim {
        let (e, s) = (d.shape[i], d.strides[i]);
        if e < 0 || e > i32::MAX as i64 {
            return Err((TP_ERR_BAD_SHAPE, format!("array '{name}': extent {e} of dim {i} is outside 0..=i32::MAX")));
        }
        if s < 0 || s > i32::MAX as i64 {
            return Err((TP_ERR_BAD_SHAPE, format!("array '{name}': stride {s} of dim {i} is outside 0..=i32::MAX")));
        }
        bytes = bytes.saturating_mul(e);
    }
    if bytes > i32::MAX as i64 {
        return Err((TP_ERR_BAD_SHAPE, format!(
            "array '{name}': {bytes} bytes exceed cutile 0.5's i32 byte count of a borrowed tensor")));
    }
    Ok(d)
}

/// The descriptor of an array whose strides the port reads by dimension (a gather / scatter on
/// a rank >= 2 array: the translator's `tensor_strides` helper), in the layout the port was
/// compiled and IR-checked for: innermost stride 1 (static), every other stride dynamic.
///
/// cutile 0.5.0 specialises every stride that is 1 at launch (cutile-compiler
/// `specialization.rs` `compute_spec`: `stride_one`; cutile `tensor.rs` `strides_hint` and the
/// launcher cutile-macro `kernel_launcher_generator.rs` builds: a unit stride is compiled as a
/// static 1, any other as dynamic) and the kernel entry keeps only the dynamic strides in the
/// tensor's `strides` metadata (cutile-compiler `kernel_entry_generator.rs`,
/// `get_dynamic_elements`). The port reads stride k as element k of that list
/// (`get_shape_dim(tensor_strides(t), k)`; compile_intrinsic.rs `dims_values.remove(k)`), so a
/// unit stride on a non-innermost dimension shifts the list: dimension k reads another
/// dimension's stride, or past the end (tg_flash_decode's LSE_Out of extents (1, 8, 4, 1),
/// strides (32, 4, 1, 1) compiles as `[-1, -1, 1, 1]`: "removal index (is 2) should be < len (is
/// 2)"). The port multiplies the innermost index by a constant 1, so its innermost stride must be
/// 1.
///
/// So: a dimension of extent 1 is read only at index 0 and its stride is free: set to 1 when
/// innermost (also for extent 0), else (where it is 1) to the stride a C-contiguous layout gives
/// it, at least 2. A non-innermost dimension of extent > 1 with stride 1 keeps it, marked
/// [`DYNAMIC_UNIT_STRIDE`]: [`borrow`] then passes 1 and has cutile compile that stride as dynamic (the IR-checked
/// `[-1, ..., -1, 1]`), so the port reads every element where the caller's layout has it, with no
/// copy. An innermost stride other than 1 on an extent > 1 is refused (`TP_ERR_BAD_SHAPE`) naming
/// the array, its strides and why, instead of a wrong address (`tileport/ffi.py`
/// `restage_strides` copies such an array).
pub fn as_compiled_strides(d: &TpTensor, name: &str) -> Result<TpTensor, TpError> {
    let mut out = *d;
    let n = d.ndim as usize;
    if n == 0 {
        return Ok(out);
    }
    if out.shape[n - 1] <= 1 {
        out.strides[n - 1] = 1;     // read at index 0 at most
    }
    if out.strides[n - 1] != 1 {
        return Err((TP_ERR_BAD_SHAPE, format!(
            "array '{name}': extents {:?}, strides {:?}: the port reads this array's strides by \
             dimension and is compiled for innermost stride 1 (it multiplies the innermost index by \
             a constant 1), so it cannot read this layout (pass a copy with innermost stride 1)",
            &d.shape[..n], &d.strides[..n])));
    }
    let mut contiguous: i64 = 1;
    for k in (0..n - 1).rev() {
        contiguous = contiguous.saturating_mul(out.shape[k + 1].max(1));
        if out.strides[k] == 1 {
            out.strides[k] = if out.shape[k] == 1 { contiguous.clamp(2, i32::MAX as i64) } else { DYNAMIC_UNIT_STRIDE };
        }
    }
    Ok(out)
}

/// Stride value [`as_compiled_strides`] gives a non-innermost dimension of extent > 1 whose stride
/// is 1: [`borrow`] passes the stride 1 and keeps it dynamic in cutile's specialisation. Never a
/// caller's stride ([`check`] refuses negative strides).
pub const DYNAMIC_UNIT_STRIDE: i64 = -1;

/// The strides cutile gets for a descriptor (a [`DYNAMIC_UNIT_STRIDE`] made 1) and a bit per
/// dimension whose unit stride must stay dynamic (bit k: dimension k); 0 for a plain descriptor.
fn cutile_strides(d: &TpTensor) -> (Vec<i32>, u32) {
    let n = d.ndim as usize;
    let mut dynamic_units = 0u32;
    let strides = d.strides[..n].iter().enumerate().map(|(k, &v)| {
        if v == DYNAMIC_UNIT_STRIDE {
            dynamic_units |= 1 << k;
            1
        } else {
            v as i32
        }
    }).collect();
    (strides, dynamic_units)
}

/// What a shim passes cutile for an array whose strides the port reads by dimension (for tests
/// on machines without a GPU): [`as_compiled_strides`], then the strides [`borrow`] gives cutile
/// written to `strides` (`ndim` i32) and the dimensions whose unit stride stays dynamic to
/// `dynamic_units` (bit k: dimension k). Returns [`TP_OK`] or the refusal's status (message:
/// `tp_last_error`).
///
/// # Safety
/// `d` must point to a readable [`TpTensor`]; `strides` to `d.ndim` writable i32, `dynamic_units`
/// to a writable u32.
#[no_mangle]
pub unsafe extern "C" fn tp_compiled_strides(d: *const TpTensor, strides: *mut i32, dynamic_units: *mut u32) -> i32 {
    guard("tp_compiled_strides", || {
        if d.is_null() {
            return Err((TP_ERR_NULL_POINTER, "descriptor pointer is null".to_string()));
        }
        let d = check(d, "a", (*d).ndim.clamp(0, TP_MAX_DIMS as i32) as usize)?;
        let (st, units) = cutile_strides(&as_compiled_strides(d, "a")?);
        std::ptr::copy_nonoverlapping(st.as_ptr(), strides, st.len());
        *dynamic_units = units;
        Ok(())
    })
}

/// Have cutile compile the unit strides of the dimensions in `dynamic_units` (bit k: dimension
/// k) as dynamic: clears their `stride_one` bits in the tensor's specialisation.
///
/// cutile 0.5.0 derives a tensor's `SpecializationBits` from its strides and offers no setter
/// (the `Tensor` field `spec` is `pub(crate)`, read by the public `spec()`: cutile `tensor.rs`); the launcher reads the strides hint and
/// the JIT cache key from it (`spec().stride_one`: 1 = static, else -1) and pushes every stride
/// as a kernel argument (`push_kernel_args`), with no check of hint against value ("TODO (hme):
/// add validation for strides here too", cutile-macro `kernel_launcher_generator.rs`). A stride
/// compiled as dynamic whose value is 1 is read as 1. `stride_div` of a unit stride is already 1
/// (no divisibility assumed).
fn keep_unit_strides_dynamic<T: cuda_core::DType>(t: &mut Tensor<T>, dynamic_units: u32) {
    let base = t as *mut Tensor<T>;
    // SAFETY: `t` is borrowed mutably and uniquely; the field's address comes from its own
    // accessor and is reached from `base` (derived from that unique borrow), so the write goes
    // through a pointer with write permission to the whole tensor.
    unsafe {
        let off = ((*base).spec() as *const _ as usize) - (base as usize);
        let spec = &mut *((base as *mut u8).add(off) as *mut cutile::tensor::SpecializationBits);
        for (k, one) in spec.stride_one.iter_mut().enumerate() {
            if dynamic_units & (1 << k) != 0 {
                *one = false;
            }
        }
    }
}

/// The one dtype all arrays share; an error names the first array that differs.
pub fn same_dtype(arrays: &[(&str, &TpTensor)]) -> Result<i32, TpError> {
    let (first, d0) = arrays[0];
    for (name, d) in &arrays[1..] {
        if d.dtype != d0.dtype {
            return Err((TP_ERR_BAD_DTYPE, format!(
                "array '{name}' is {} but '{first}' is {}: the kernel takes one element type",
                dtype_name(d.dtype).unwrap_or("?"), dtype_name(d0.dtype).unwrap_or("?"))));
        }
    }
    Ok(d0.dtype)
}

/// A launch grid with every dimension >= 1.
pub fn grid(x: u32, y: u32, z: u32) -> Result<(u32, u32, u32), TpError> {
    if x == 0 || y == 0 || z == 0 {
        return Err((TP_ERR_BAD_ARGUMENT, format!("launch grid ({x}, {y}, {z}) has a zero dimension")));
    }
    Ok((x, y, z))
}

/// Largest device ordinal a shim accepts (the context cache is a vector indexed by ordinal).
pub const TP_MAX_DEVICE: i32 = 255;

static CONTEXTS: OnceLock<Mutex<Vec<Option<Arc<cuda_core::Context>>>>> = OnceLock::new();

/// Streams one thread keeps wrapped (the most recent first); beyond it the oldest is forgotten.
const STREAMS_PER_THREAD: usize = 8;

/// A caller's stream as cutile sees it, kept across calls: (device, raw handle, context, stream).
type Wrapped = (i32, usize, Arc<cuda_core::Context>, ManuallyDrop<Arc<cuda_core::Stream>>);

thread_local! {
    static STREAMS: RefCell<Vec<Wrapped>> = const { RefCell::new(Vec::new()) };
}

/// The device's primary context, retained once per process and kept.
fn context(device: i32) -> Result<Arc<cuda_core::Context>, TpError> {
    let cell = CONTEXTS.get_or_init(|| Mutex::new(Vec::new()));
    let mut ctxs = cell.lock().map_err(|_| (TP_ERR_CUDA_CONTEXT, "context cache poisoned".to_string()))?;
    let i = device as usize;
    if ctxs.len() <= i {
        ctxs.resize(i + 1, None);
    }
    match &ctxs[i] {
        Some(c) => Ok(c.clone()),
        None => {
            let c = cuda_core::Context::new(i)
                .map_err(|e| (TP_ERR_CUDA_CONTEXT, format!("CUDA device {device}: {e:?}")))?;
            ctxs[i] = Some(c.clone());
            Ok(c)
        }
    }
}

/// The device's primary context (retained once per process and kept) and the caller's stream.
///
/// The `Stream` wrapper of a (device, handle) pair is made once per thread and kept: cuda-core's
/// `Stream` drop queries the stream and, while work is queued on it (always, for back-to-back
/// launches), records an event and hands it to a retirement thread -- a per-call cost of
/// several driver calls that a borrowed handle does not need. Kept wrappers are never dropped
/// (a wrapper pushed out of the per-thread cache, or left at thread exit, is forgotten: a
/// few dozen bytes), because the caller may have destroyed the handle by then.
///
/// # Safety
/// `stream` must be a valid `CUstream` of `device` (or null for the legacy default stream)
/// that outlives the launch.
pub unsafe fn context_and_stream(device: i32, stream: *mut c_void)
    -> Result<(Arc<cuda_core::Context>, Arc<cuda_core::Stream>), TpError> {
    if !(0..=TP_MAX_DEVICE).contains(&device) {
        return Err((TP_ERR_BAD_ARGUMENT, format!("device ordinal {device} is outside 0..={TP_MAX_DEVICE}")));
    }
    let key = stream as usize;
    let hit = STREAMS.with(|c| {
        let mut c = c.borrow_mut();
        let pos = c.iter().position(|(d, h, _, _)| *d == device && *h == key)?;
        if pos != 0 {
            let w = c.remove(pos);
            c.insert(0, w);
        }
        let (_, _, ctx, s) = &c[0];
        Some((ctx.clone(), Arc::clone(s)))
    });
    let (ctx, s) = match hit {
        Some(found) => found,
        None => {
            let ctx = context(device)?;
            let s = cuda_core::Stream::borrow_raw(stream, &ctx);
            STREAMS.with(|c| {
                let mut c = c.borrow_mut();
                if c.len() >= STREAMS_PER_THREAD {
                    c.pop();        // ManuallyDrop: the wrapper is forgotten, never dropped
                }
                c.insert(0, (device, key, ctx.clone(), ManuallyDrop::new(s.clone())));
            });
            (ctx, s)
        }
    };
    ctx.bind_to_thread()
        .map_err(|e| (TP_ERR_CUDA_CONTEXT, format!("CUDA device {device}: bind context: {e:?}")))?;
    Ok((ctx, s))
}

/// Borrowed tensors one thread keeps; beyond it the slot filled longest ago is reused.
///
/// More than the arrays of any one kernel: the slots are filled round-robin, so a kernel whose
/// arrays outnumber the slots misses on every array of every call (a cyclic reuse of n > slots
/// entries evicts each one just before it is needed again). With 16 slots tg_mamba2's
/// `compute_da_db_dc_ddt_kernel` (17 arrays) re-made all 17 tensors per call: on the H200 its
/// host time per call was 28.7 µs beside 15.9 µs for the 13 arrays of `compute_dd_dcb_dx_kernel`
/// (docs/results/h200/ops/tg_mamba2/bench.csv, 2026-12-02); on the CPU a miss costs about
/// 0.3 µs per array against 0.02-0.07 µs for a hit (`tests::time_borrow` below, 2026-12-02: 17 arrays 5.33 -> 0.40 µs per call).
pub const TENSORS_PER_THREAD: usize = 64;

/// What a borrowed tensor is made of: device pointer, rank, extents, strides, dtype code, context.
#[derive(Clone, Copy, PartialEq, Eq)]
struct TensorKey {
    data: u64,
    ndim: i32,
    shape: [i64; TP_MAX_DIMS],
    strides: [i64; TP_MAX_DIMS],
    dtype: i32,
    context: usize,
}

const NO_KEY: TensorKey = TensorKey { data: 0, ndim: 0, shape: [0; TP_MAX_DIMS], strides: [0; TP_MAX_DIMS],
                                      dtype: 0, context: 0 };

/// A thread's borrowed tensors: fixed slots, looked up in place (no entry moves on a hit) and
/// filled round-robin; an empty slot has no tensor (a checked descriptor's data is never 0).
///
/// A lookup starts at `cursor`, the slot after the last one hit or filled, and goes round: a
/// shim borrows its arrays in one order every call and a miss fills the next slot, so the arrays
/// of a repeated call sit in consecutive slots and each lookup hits on its first comparison.
struct TensorCache {
    keys: [TensorKey; TENSORS_PER_THREAD],
    tensors: [Option<Arc<dyn std::any::Any + Send + Sync>>; TENSORS_PER_THREAD],
    next: usize,
    cursor: usize,
}

impl TensorCache {
    /// The slot holding `key`, searched from `cursor` round the ring.
    fn find(&self, key: &TensorKey) -> Option<usize> {
        let (tail, head) = self.keys.split_at(self.cursor);
        let hit = |k: &TensorKey| k.data == key.data && k == key;
        head.iter().position(hit).map(|i| i + self.cursor).or_else(|| tail.iter().position(hit))
    }
}

thread_local! {
    static TENSORS: RefCell<TensorCache> = const { RefCell::new(TensorCache {
        keys: [NO_KEY; TENSORS_PER_THREAD],
        tensors: [const { None }; TENSORS_PER_THREAD],
        next: 0,
        cursor: 0,
    }) };
}

/// Borrow the memory of a checked descriptor as a cutile tensor (no copy, never freed).
///
/// A borrowed tensor is a pure function of its descriptor (pointer, extents, strides, dtype;
/// the specialisation bits cutile derives from them) plus access bookkeeping that every launch
/// releases before the shim returns (`async_on`). So the tensor of a descriptor seen before on
/// this thread is reused: calling a kernel on the same arrays again (a loop) skips cutile's
/// per-tensor allocations and checks (a miss: two `Vec`s here, cutile's `DeviceBuffer`, storage
/// and access tracker, the `Arc`s, and dropping the tensor it evicts), and a hit costs a key
/// comparison, a reference count, no allocation and no move. Dropping a borrowed tensor frees
/// nothing.
///
/// # Safety
/// `d` must describe live device memory of element type `T` in `ctx` for the whole launch.
pub unsafe fn borrow<T: cuda_core::DType + 'static>(d: &TpTensor, ctx: &Arc<cuda_core::Context>) -> Arc<Tensor<T>> {
    let n = d.ndim as usize;
    let mut key = TensorKey { data: d.data, ndim: d.ndim, shape: [0; TP_MAX_DIMS], strides: [0; TP_MAX_DIMS],
                              dtype: d.dtype, context: Arc::as_ptr(ctx) as usize };
    key.shape[..n].copy_from_slice(&d.shape[..n]);
    key.strides[..n].copy_from_slice(&d.strides[..n]);
    let hit = TENSORS.with(|c| {
        let mut c = c.borrow_mut();
        let i = c.find(&key)?;
        let t = c.tensors[i].clone()?.downcast::<Tensor<T>>().ok()?;
        c.cursor = (i + 1) % TENSORS_PER_THREAD;
        Some(t)
    });
    if let Some(t) = hit {
        return t;
    }
    let (strides, dynamic_units) = cutile_strides(d);
    let mut t = Tensor::<T>::borrow_raw_parts(d.data, ctx.clone(), d.shape[..n].iter().map(|&v| v as i32).collect(),
                                              strides);
    if dynamic_units != 0 {
        keep_unit_strides_dynamic(&mut t, dynamic_units);
    }
    let t = Arc::new(t);
    let evicted = TENSORS.with(|c| {
        let mut c = c.borrow_mut();
        // a key present with a tensor of another element type is replaced in place
        let i = c.find(&key).unwrap_or(c.next);
        if i == c.next {
            c.next = (c.next + 1) % TENSORS_PER_THREAD;
        }
        c.cursor = (i + 1) % TENSORS_PER_THREAD;
        c.keys[i] = key;
        c.tensors[i].replace(t.clone() as Arc<dyn std::any::Any + Send + Sync>)
    });
    drop(evicted);      // outside the cache's borrow: cutile's drop code never sees it held
    t
}

/// Read a `T` at byte offset `off` of a packed argument block (any alignment).
///
/// # Safety
/// `blk` must point to at least `off + size_of::<T>()` readable bytes holding a valid `T`.
pub unsafe fn rd<T: Copy>(blk: *const u8, off: usize) -> T {
    std::ptr::read_unaligned(blk.add(off) as *const T)
}

/// The status of a packed entry's block pointer: `Some(code)` (and the message naming the
/// entry) when it is null or not 8-byte aligned (the descriptors in it are read in place).
pub fn bad_block(blk: *const u8, symbol: &str) -> Option<i32> {
    if blk.is_null() {
        set_last_error(format!("{symbol}: argument block pointer is null"));
        return Some(TP_ERR_NULL_POINTER);
    }
    if (blk as usize) % 8 != 0 {
        set_last_error(format!("{symbol}: argument block {blk:p} is not 8-byte aligned"));
        return Some(TP_ERR_BAD_ARGUMENT);
    }
    None
}

/// Map a cutile launch error to [`TP_ERR_LAUNCH`].
pub fn launched<T, E: std::fmt::Debug>(r: Result<T, E>) -> Result<(), TpError> {
    r.map(|_| ()).map_err(|e| (TP_ERR_LAUNCH, format!("cutile launch failed: {e:?}")))
}

// -- the Python fast path's marshalling, in Rust (the default; TILEPORT_RUST_MARSHAL=0 turns it off) --
//
// `tileport/ffi.py` reads every torch tensor's data pointer, extents, strides, device and dtype and
// packs them with the scalars, constexprs, grid, device and stream into a shim's argument block:
// about 0.25 µs of interpreter work per array besides torch's own (CPU with a stub driver,
// 2026-12-01). `tp_py_call` does the same reads and fills the block with the layout of
// `tileport.host.call_block`, then calls the shim's packed entry with the GIL released.
//
// Each array is read in one of two ways. Where its type exposes the DLPack C exchange API
// (`type(t).__dlpack_c_exchange_api__`, torch >= 2.10; dlpack.h 1.3 `DLPackExchangeAPI`) and
// `tileport/ffi.py` passed that table's address, one C call (`dltensor_from_py_object_no_sync`)
// fills a [`DlTensor`] on the stack with no allocation and no Python object made. Otherwise (no
// table, `TILEPORT_DLPACK=0`, or the call failed: its Python error is cleared), the array is read
// through the CPython C API: the torch methods `get_device()`, `data_ptr()`, `dtype`, `shape`,
// `stride()` by interned name, two of them making a tuple. Both ways write the same bytes. With
// the C-API reads `tp_py_call_t` cost about 1.15 µs per array more than the packed shim on the H200
// (docs/results/h200/hostbench-2026-12-01-s3.txt: `rs` 5.73 + 2.14 µs per array, `native` 4.70
// + 0.99); on the CPU with torch 2.11 tensors (2026-12-01) the DLPack read of an array took about
// 0.05 µs and the C-API reads 0.34 µs (hostbench's `rs` and `capi` columns say it on a GPU).
//
// `tp_py_call` accepts only what the Python fast path accepts (tensors of the listed types on the
// launch device, exact float / int values in range, dtypes of the table) and returns -1 for
// anything else, with no Python error set: the caller then takes the Python path, which names the
// fault. The C API is looked up in the running process (`dlsym`), so the library still loads
// where no Python is.

type PyObj = *mut c_void;

/// The CPython C API functions `tp_py_call` uses, resolved once in the calling process.
struct PyApi {
    tuple_size: unsafe extern "C" fn(PyObj) -> isize,
    tuple_get: unsafe extern "C" fn(PyObj, isize) -> PyObj,
    dict_get: unsafe extern "C" fn(PyObj, PyObj) -> PyObj,
    get_attr: unsafe extern "C" fn(PyObj, PyObj) -> PyObj,
    call_method: unsafe extern "C" fn(PyObj, PyObj, ...) -> PyObj,
    as_i64: unsafe extern "C" fn(PyObj) -> i64,
    as_u64: unsafe extern "C" fn(PyObj) -> u64,
    as_f64: unsafe extern "C" fn(PyObj) -> f64,
    type_of: unsafe extern "C" fn(PyObj) -> PyObj,
    occurred: unsafe extern "C" fn() -> PyObj,
    clear: unsafe extern "C" fn(),
    incref: unsafe extern "C" fn(PyObj),
    decref: unsafe extern "C" fn(PyObj),
    save: unsafe extern "C" fn() -> *mut c_void,
    restore: unsafe extern "C" fn(*mut c_void),
    /// interned "data_ptr", "shape", "stride", "get_device", "dtype"
    names: [usize; 5],
}

extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const std::ffi::c_char) -> *mut c_void;
}

static PY_API: OnceLock<Option<PyApi>> = OnceLock::new();

/// Resolve the C API (the caller holds the GIL: the names are interned here).
unsafe fn py_api() -> Option<&'static PyApi> {
    PY_API.get_or_init(|| {
        macro_rules! sym {
            ($name:literal) => {{
                let p = dlsym(std::ptr::null_mut(), $name.as_ptr());
                if p.is_null() { return None; }
                std::mem::transmute::<*mut c_void, _>(p)
            }};
        }
        let intern: unsafe extern "C" fn(*const std::ffi::c_char) -> PyObj = sym!(c"PyUnicode_InternFromString");
        let mut names = [0usize; 5];
        for (i, n) in [c"data_ptr", c"shape", c"stride", c"get_device", c"dtype"].iter().enumerate() {
            let o = intern(n.as_ptr());
            if o.is_null() { return None; }
            names[i] = o as usize;      // kept for the life of the process
        }
        Some(PyApi {
            tuple_size: sym!(c"PyTuple_Size"), tuple_get: sym!(c"PyTuple_GetItem"),
            dict_get: sym!(c"PyDict_GetItem"),
            get_attr: sym!(c"PyObject_GetAttr"), call_method: sym!(c"PyObject_CallMethodObjArgs"),
            as_i64: sym!(c"PyLong_AsLongLong"), as_u64: sym!(c"PyLong_AsUnsignedLongLong"),
            as_f64: sym!(c"PyFloat_AsDouble"), type_of: sym!(c"PyObject_Type"),
            occurred: sym!(c"PyErr_Occurred"), clear: sym!(c"PyErr_Clear"), incref: sym!(c"Py_IncRef"),
            decref: sym!(c"Py_DecRef"),
            save: sym!(c"PyEval_SaveThread"), restore: sym!(c"PyEval_RestoreThread"), names,
        })
    }).as_ref()
}

/// A new reference or None (a Python error is left set: the caller clears it).
unsafe fn owned(o: PyObj) -> Option<PyObj> {
    if o.is_null() { None } else { Some(o) }
}

/// The exact type of `o` (a pointer compared with the tables, not dereferenced).
unsafe fn type_ptr(api: &PyApi, o: PyObj) -> usize {
    let t = (api.type_of)(o);
    if !t.is_null() {
        (api.decref)(t);        // types outlive their instances: the pointer stays valid
    }
    t as usize
}

/// `DLDevice` of dlpack.h 1.3: a device type (`kDLCUDA` = 2, `kDLCPU` = 1) and an ordinal.
#[repr(C)]
#[derive(Clone, Copy)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

/// `DLDataType` of dlpack.h 1.3: type code, bits per lane, lanes.
#[repr(C)]
#[derive(Clone, Copy)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

/// `DLTensor` of dlpack.h 1.3 (48 bytes on x86-64): filled by the producer; `shape` and `strides`
/// (elements; present for every `ndim` > 0 from DLPack 1.2 on) stay valid until the producer's
/// call returns, so they are copied at once.
#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *const i64,
    strides: *const i64,
    byte_offset: u64,
}

/// The part of dlpack.h 1.3's `DLPackExchangeAPI` (header `{version {major, minor}, prev_api}`,
/// then five function pointers) that `tp_py_call` uses: `tileport/ffi.py` `exchange_api` passes
/// a table only where the major version is 1 and `dltensor_from_py_object_no_sync` is not null.
#[repr(C)]
#[allow(dead_code)]     // the fields before and after the one read keep the C layout
struct DlExchangeApi {
    major: u32,
    minor: u32,
    prev_api: *const c_void,
    managed_tensor_allocator: *const c_void,
    managed_tensor_from_py_object_no_sync: *const c_void,
    managed_tensor_to_py_object_no_sync: *const c_void,
    /// `int (*)(PyObject*, DLTensor* out)`: 0, or -1 with a Python error set
    dltensor_from_py_object_no_sync: Option<unsafe extern "C" fn(PyObj, *mut DlTensor) -> i32>,
    current_work_stream: *const c_void,
}

/// `kDLCUDA` of dlpack.h 1.3's `DLDeviceType`.
const DL_CUDA: i32 = 2;

/// DLPack `(type code, bits)` of one lane -> tileport dtype code (`host.DTYPE_CODES`), from
/// dlpack.h 1.3's `DLDataTypeCode` (kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6,
/// kDLFloat8_e4m3fn 10, kDLFloat8_e5m2 12; bool stored in 8 bits), as torch 2.11 exports them:
/// for every dtype here `tp_py_call`'s block equalled the Python fast path's on torch 2.11 CPU
/// tensors (2026-12-01). Any other pair, or lanes other than 1, is a dtype `tp_py_call` declines.
const DLPACK_DTYPES: [(u8, u8, i32); 15] = [
    (2, 16, TP_F16), (4, 16, TP_BF16), (2, 32, TP_F32), (2, 64, TP_F64),
    (0, 8, TP_I8), (0, 16, TP_I16), (0, 32, TP_I32), (0, 64, TP_I64),
    (1, 8, TP_U8), (1, 16, TP_U16), (1, 32, TP_U32), (1, 64, TP_U64),
    (6, 8, TP_BOOL), (10, 8, TP_F8E4M3FN), (12, 8, TP_F8E5M2),
];

/// What a DLPack read of one array gave.
enum DlRead {
    /// the descriptor and the CUDA ordinal
    Got(TpTensor, i64),
    /// what the Python fast path would not take: `tp_py_call` returns -1
    Decline,
    /// read it through the C API instead (the exchange call failed, or left what today's reads
    /// decide: no strides from a producer older than DLPack 1.2, a null data pointer)
    CApi,
}

/// Read `t` through its type's DLPack exchange table `x` (module comment).
///
/// Declines a device other than CUDA, a dtype outside [`DLPACK_DTYPES`] or of lanes != 1, a rank
/// other than `rank`, a `byte_offset` that is not a whole number of elements; the data pointer is
/// `data + byte_offset`.
unsafe fn dl_descriptor(api: &PyApi, x: *const DlExchangeApi, t: PyObj, rank: usize) -> DlRead {
    let Some(read) = (*x).dltensor_from_py_object_no_sync else { return DlRead::CApi };
    let mut dl = DlTensor { data: std::ptr::null_mut(), device: DlDevice { device_type: 0, device_id: 0 }, ndim: -1,
                            dtype: DlDataType { code: 0, bits: 0, lanes: 0 }, shape: std::ptr::null(),
                            strides: std::ptr::null(), byte_offset: 0 };
    if read(t, &mut dl) != 0 {
        (api.clear)();
        return DlRead::CApi;
    }
    if dl.device.device_type != DL_CUDA {
        return DlRead::Decline;
    }
    let DlDataType { code, bits, lanes } = dl.dtype;
    let Some(&(_, _, tp)) = DLPACK_DTYPES.iter().find(|(c, b, _)| *c == code && *b == bits) else {
        return DlRead::Decline;
    };
    if lanes != 1 || dl.ndim < 0 || dl.ndim as usize != rank || rank > TP_MAX_DIMS
        || dl.byte_offset % (bits as u64 / 8) != 0 {
        return DlRead::Decline;
    }
    if dl.data.is_null() || (rank > 0 && (dl.shape.is_null() || dl.strides.is_null())) {
        return DlRead::CApi;
    }
    let Some(data) = (dl.data as u64).checked_add(dl.byte_offset) else { return DlRead::Decline };
    let mut desc = TpTensor { data, ndim: rank as i32, shape: [0; TP_MAX_DIMS], strides: [0; TP_MAX_DIMS], dtype: tp };
    for k in 0..rank {
        desc.shape[k] = *dl.shape.add(k);
        desc.strides[k] = *dl.strides.add(k);
    }
    DlRead::Got(desc, dl.device.device_id as i64)
}

/// Read `t` through the CPython C API (module comment): its descriptor and `get_device()`, or
/// None (a Python error may be left set: the caller clears it).
unsafe fn capi_descriptor(api: &PyApi, t: PyObj, rank: usize, dtypes: &[usize]) -> Option<(TpTensor, i64)> {
    let nul = std::ptr::null_mut::<c_void>();
    let n = &api.names;
    let dev = owned((api.call_method)(t, n[3] as PyObj, nul))?;
    let device = (api.as_i64)(dev);
    (api.decref)(dev);
    let p = owned((api.call_method)(t, n[0] as PyObj, nul))?;
    let data = (api.as_u64)(p);
    (api.decref)(p);
    let dt = owned((api.get_attr)(t, n[4] as PyObj))?;
    let code = dtypes.chunks(2).find(|c| c[0] == dt as usize).map(|c| c[1] as i32);
    (api.decref)(dt);
    let sh = owned((api.get_attr)(t, n[1] as PyObj))?;
    let st = match owned((api.call_method)(t, n[2] as PyObj, nul)) {
        Some(st) => st,
        None => { (api.decref)(sh); return None; }
    };
    let mut ok = (api.tuple_size)(sh) == rank as isize && (api.tuple_size)(st) == rank as isize;
    let mut desc = TpTensor { data, ndim: rank as i32, shape: [0; TP_MAX_DIMS], strides: [0; TP_MAX_DIMS],
                              dtype: code.unwrap_or(0) };
    for k in 0..rank.min(TP_MAX_DIMS) {
        if !ok { break; }
        let (e, s) = ((api.tuple_get)(sh, k as isize), (api.tuple_get)(st, k as isize));
        ok = !e.is_null() && !s.is_null();
        if ok {
            desc.shape[k] = (api.as_i64)(e);
            desc.strides[k] = (api.as_i64)(s);
        }
    }
    (api.decref)(sh);
    (api.decref)(st);
    if !ok || code.is_none() || !(api.occurred)().is_null() {
        return None;
    }
    Some((desc, device))
}

/// One array's descriptor (the `TpTensor` layout) written at `d`; its device, or None.
/// `apis[i]`: the DLPack exchange table of `types[i]` (0: none; `apis` may be empty).
unsafe fn py_descriptor(api: &PyApi, t: PyObj, rank: usize, types: &[usize], apis: &[usize], dtypes: &[usize],
                        d: *mut u8) -> Option<i64> {
    let tt = type_ptr(api, t);
    let i = types.iter().position(|&x| x == tt)?;
    let x = apis.get(i).copied().unwrap_or(0);
    let read = if x != 0 { dl_descriptor(api, x as *const DlExchangeApi, t, rank) } else { DlRead::CApi };
    let (desc, device) = match read {
        DlRead::Got(desc, device) => (desc, device),
        DlRead::Decline => return None,
        DlRead::CApi => capi_descriptor(api, t, rank, dtypes)?,
    };
    // field by field over zeroed bytes: the padding reads as the Python path packs it (zeros)
    let dp = d as *mut TpTensor;
    std::ptr::write_bytes(d, 0, std::mem::size_of::<TpTensor>());
    std::ptr::addr_of_mut!((*dp).data).write_unaligned(desc.data);
    std::ptr::addr_of_mut!((*dp).ndim).write_unaligned(desc.ndim);
    std::ptr::addr_of_mut!((*dp).shape).write_unaligned(desc.shape);
    std::ptr::addr_of_mut!((*dp).strides).write_unaligned(desc.strides);
    std::ptr::addr_of_mut!((*dp).dtype).write_unaligned(desc.dtype);
    Some(device)
}

/// Whether every element of `d` has an address of its own, by a sufficient test: the dimensions
/// of extent > 1, sorted by stride, each step past the largest offset of the earlier ones (true
/// for C- and Fortran-contiguous arrays, slices, padded rows; false for a stride 0 on an extent
/// > 1 and rows that overlap). An array with no element is distinct. `tileport.ffi.shares_memory`
/// decides the layouts this test does not clear.
pub fn distinct_elements(d: &TpTensor) -> bool {
    let n = (d.ndim.max(0) as usize).min(TP_MAX_DIMS);
    let mut dims = [(0i64, 0i64); TP_MAX_DIMS];
    let mut m = 0;
    for k in 0..n {
        let e = d.shape[k];
        if e == 0 {
            return true;
        }
        if e != 1 {
            dims[m] = (d.strides[k].saturating_abs(), e);
            m += 1;
        }
    }
    dims[..m].sort_unstable();
    let mut reach: i64 = 0;
    for &(s, e) in &dims[..m] {
        if s <= reach {
            return false;
        }
        reach = reach.saturating_add(s.saturating_mul(e - 1));
    }
    true
}

/// Turn on cutile's JIT disk cache of cubins (cutile-compiler 0.5.0 `jit_cache`: off by default,
/// no environment switch; content-addressed by the Tile IR bytecode, target, opt level and the
/// tileiras fingerprint). `dir` null: cutile's own default location (`~/.cache/cutile/kernels`,
/// a 0700 per-user directory); else a NUL-terminated UTF-8 directory path. A later process that
/// compiles the same kernel reads the cubin instead of running tileiras again, as cuTile Python's
/// own disk cache (`CUDA_TILE_CACHE_DIR`, on by default) does for the reference. Returns
/// [`TP_OK`], or [`TP_ERR_BAD_ARGUMENT`] (message in `tp_last_error`) when the directory cannot
/// be made or is not a UTF-8 path.
///
/// # Safety
/// `dir` must be null or point to a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn tp_jit_disk_cache(dir: *const std::ffi::c_char) -> i32 {
    use cutile::jit_cache::{enable, FileSystemJitStore};
    let store = if dir.is_null() {
        FileSystemJitStore::default_location()
    } else {
        match std::ffi::CStr::from_ptr(dir).to_str() {
            Ok(path) => FileSystemJitStore::new(std::path::PathBuf::from(path)),
            Err(e) => Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)),
        }
    };
    match store {
        Ok(store) => {
            enable(Arc::new(store));
            TP_OK
        }
        Err(e) => {
            set_last_error(format!("tp_jit_disk_cache: {e}"));
            TP_ERR_BAD_ARGUMENT
        }
    }
}

/// cutile's JIT disk cache counters since the process started, written to `out[0..5]`: hits,
/// misses, puts, bytes written, I/O errors (cutile-compiler 0.5.0 `jit_cache::stats`).
///
/// # Safety
/// `out` must point to 5 writable u64.
#[no_mangle]
pub unsafe extern "C" fn tp_jit_cache_stats(out: *mut u64) {
    let s = cutile::jit_cache::stats();
    for (i, v) in [s.hits, s.misses, s.puts, s.bytes_written, s.io_errors].into_iter().enumerate() {
        *out.add(i) = v;
    }
}

/// Bytes of scratch memory per array slot ([`tp_set_scratch`]; `tileport/ffi.py` `HostLibrary.scratch`).
pub const TP_SCRATCH_SLOT_BYTES: u64 = 256;

/// Per device ordinal (0..=[`TP_MAX_DEVICE`]): the scratch allocation [`py_call`] passes for an
/// unread array given without memory, as (address, slots) in one word each; 0: none registered.
static SCRATCH: [(AtomicU64, AtomicU64); TP_MAX_DEVICE as usize + 1] =
    [const { (AtomicU64::new(0), AtomicU64::new(0)) }; TP_MAX_DEVICE as usize + 1];

/// Register `slots` slots of [`TP_SCRATCH_SLOT_BYTES`] bytes of device memory at `addr` on CUDA
/// device `device` (0 and 0: forget it). [`tp_py_call`] then gives an array the kernel never reads
/// (layout flag 0x200) that arrives without memory (data pointer 0: None is declined, an empty
/// tensor has no storage) the address of its own slot, `addr + 256 * i` for the call's i-th
/// array, as the Python fast path does: the shim refuses a null data pointer. Without this, such
/// a call was declined and marshalled again by the Python fast path, every call (tg_moe's empty
/// scale tensors: 27 µs host time per call on the H200 against ct.launch's 14, 2026-12-02).
/// The caller keeps the memory alive as long as the library may read the registration
/// (`tileport/ffi.py` keeps it for the process's life). Returns [`TP_OK`], or
/// [`TP_ERR_BAD_ARGUMENT`] for a device out of range or an address without slots.
#[no_mangle]
pub extern "C" fn tp_set_scratch(device: i32, addr: u64, slots: u64) -> i32 {
    if !(0..=TP_MAX_DEVICE).contains(&device) || (addr == 0) != (slots == 0) {
        return TP_ERR_BAD_ARGUMENT;
    }
    let (a, n) = &SCRATCH[device as usize];
    // callers hold the GIL, as tp_py_call's do: no call reads the pair while it changes
    n.store(0, Ordering::Release);
    a.store(addr, Ordering::Release);
    n.store(slots, Ordering::Release);
    TP_OK
}

/// Address of scratch slot `slot` on `device` ([`tp_set_scratch`]), or None when no allocation
/// with that many slots is registered.
fn scratch_slot(device: i32, slot: usize) -> Option<u64> {
    let (a, n) = SCRATCH.get(usize::try_from(device).ok()?)?;
    let slots = n.load(Ordering::Acquire);
    let addr = a.load(Ordering::Acquire);
    (addr != 0 && (slot as u64) < slots).then(|| addr + TP_SCRATCH_SLOT_BYTES * slot as u64)
}

/// Marshal one call of Python objects into `blk` and launch it through `packed` (module comment).
///
/// `layout` (i64): number of arrays, each array's rank (plus 0x100 for an array the kernel writes:
/// declined when its elements may share memory, [`distinct_elements`]; plus 0x200 for an array it
/// never reads: without memory, it gets its scratch slot, [`tp_set_scratch`], or the call is
/// declined when none is registered), number of tail values (scalars,
/// constexprs, then grid x, y, z), each one's kind (0 f32, 1 i32, 2 u32), the byte offsets of the
/// first tail value, of the device and of the stream. `objs` (pointer-sized): the number of
/// accepted tensor types, those type objects, the exact float and int types, the number of
/// dtypes, (dtype object, dtype code) pairs, then per tensor type the address of its DLPack
/// exchange table (dlpack.h 1.3 `DLPackExchangeAPI`, major version 1, with
/// `dltensor_from_py_object_no_sync`; 0: read that type through the C API; `tileport/ffi.py`
/// `exchange_api`). The table and this library come from one checkout (`host_build` builds
/// this file): a table without the trailing addresses, of an older `ffi.py`, would be read past
/// its end. `names`: a tuple of three tuples of str, the
/// array, scalar and constexpr names, looked up in the dicts `arrays`, `scalars` and
/// `constexprs`; `grid` a tuple of three. Returns the shim's status, or -1 (nothing launched,
/// no Python error set) for any value the Python path must look at (a missing name included).
///
/// # Safety
/// Call with the GIL held (ctypes `PyDLL`); `blk` must hold `call_block`'s size for `layout`
/// (8-byte aligned), `layout` and `objs` as described, `packed` the shim's packed entry for that
/// layout.
#[no_mangle]
pub unsafe extern "C" fn tp_py_call(packed: unsafe extern "C" fn(*const u8) -> i32, blk: *mut u8,
                                    layout: *const i64, objs: *const usize, names: PyObj, arrays: PyObj,
                                    scalars: PyObj, constexprs: PyObj, grid: PyObj, device: i32,
                                    stream: u64) -> i32 {
    let Some(api) = py_api() else { return -1 };
    py_call(api, packed, blk, layout, objs, names, arrays, scalars, constexprs, grid, device, stream)
}

/// [`tp_py_call`] with fewer arguments to convert per call (ctypes converts each one: about
/// 0.1 µs apiece on the CPU, 2026-12-01): `fixed` holds the packed entry, the block and the
/// layout (per shim and thread, set once), `args` is the tuple `(names, arrays, scalars,
/// constexprs, grid, device, stream)`; `device` must be an int in 0..=i32::MAX and `stream` an
/// int in 0..2**64 (else -1, as for anything else [`tp_py_call`] declines).
///
/// # Safety
/// As [`tp_py_call`]; `fixed` points to three pointer-sized values (packed, blk, layout).
#[no_mangle]
pub unsafe extern "C" fn tp_py_call_t(fixed: *const usize, objs: *const usize, args: PyObj) -> i32 {
    let Some(api) = py_api() else { return -1 };
    if fixed.is_null() || (api.tuple_size)(args) != 7 {
        (api.clear)();
        return -1;
    }
    let item = |k: isize| (api.tuple_get)(args, k);
    let int_t = *objs.add(2 + *objs);
    let (dv, sv) = (item(5), item(6));
    if type_ptr(api, dv) != int_t || type_ptr(api, sv) != int_t {
        return -1;
    }
    let (device, stream) = ((api.as_i64)(dv), (api.as_u64)(sv));
    if !(api.occurred)().is_null() || !(0..=i32::MAX as i64).contains(&device) {
        (api.clear)();
        return -1;
    }
    let packed: unsafe extern "C" fn(*const u8) -> i32 = std::mem::transmute(*fixed);
    py_call(api, packed, *fixed.add(1) as *mut u8, *fixed.add(2) as *const i64, objs, item(0), item(1),
            item(2), item(3), item(4), device as i32, stream)
}

#[allow(clippy::too_many_arguments)]
unsafe fn py_call(api: &PyApi, packed: unsafe extern "C" fn(*const u8) -> i32, blk: *mut u8,
                  layout: *const i64, objs: *const usize, names: PyObj, arrays: PyObj, scalars: PyObj,
                  constexprs: PyObj, grid: PyObj, device: i32, stream: u64) -> i32 {
    let na = *layout as usize;
    let ranks = std::slice::from_raw_parts(layout.add(1), na);
    let nt = *layout.add(1 + na) as usize;
    let kinds = std::slice::from_raw_parts(layout.add(2 + na), nt);
    let (tail_off, dev_off, stream_off) = (*layout.add(2 + na + nt) as usize, *layout.add(3 + na + nt) as usize,
                                           *layout.add(4 + na + nt) as usize);
    let ntypes = *objs;
    let types = std::slice::from_raw_parts(objs.add(1), ntypes);
    let (float_t, int_t) = (*objs.add(1 + ntypes), *objs.add(2 + ntypes));
    let ndt = *objs.add(3 + ntypes);
    let dtypes = std::slice::from_raw_parts(objs.add(4 + ntypes), 2 * ndt);
    let apis = std::slice::from_raw_parts(objs.add(4 + ntypes + 2 * ndt), ntypes);
    let fail = || { (api.clear)(); -1 };
    let (an, sn, cn) = ((api.tuple_get)(names, 0), (api.tuple_get)(names, 1), (api.tuple_get)(names, 2));
    if an.is_null() || sn.is_null() || cn.is_null() {
        return fail();
    }
    let (ns, nc) = ((api.tuple_size)(sn), (api.tuple_size)(cn));
    if (api.tuple_size)(an) != na as isize || ns + nc + 3 != nt as isize || (api.tuple_size)(grid) != 3 {
        return fail();
    }
    // a borrowed reference to tail value k (scalars, constexprs, grid), or null
    let tail_value = |k: isize| -> PyObj {
        if k < ns {
            (api.dict_get)(scalars, (api.tuple_get)(sn, k))
        } else if k < ns + nc {
            (api.dict_get)(constexprs, (api.tuple_get)(cn, k - ns))
        } else {
            (api.tuple_get)(grid, k - ns - nc)
        }
    };
    for (i, &word) in ranks.iter().enumerate() {
        let (r, written, unread) = (word & 0xff, word & 0x100 != 0, word & 0x200 != 0);
        let t = (api.dict_get)(arrays, (api.tuple_get)(an, i as isize));
        if t.is_null() || word < 0 || word > 0x3ff || r as usize > TP_MAX_DIMS {
            return fail();
        }
        // held while its methods run (a method could drop the caller's dict entry)
        (api.incref)(t);
        let at = blk.add(std::mem::size_of::<TpTensor>() * i);
        let got = py_descriptor(api, t, r as usize, types, apis, dtypes, at);
        (api.decref)(t);
        match got {
            Some(d) if d == device as i64 => {}
            _ => return fail(),
        }
        if written || unread {
            let mut d = std::ptr::read_unaligned(at as *const TpTensor);
            if written && !distinct_elements(&d) {
                return fail();      // may share memory: the Python paths decide (ffi.shares_memory)
            }
            if unread && d.data == 0 {
                match scratch_slot(device, i) {
                    Some(p) => d.data = p,
                    None => return fail(),      // the Python fast path allocates and registers it
                }
                std::ptr::write_unaligned(at as *mut TpTensor, d);
            }
        }
    }
    for (k, &kind) in kinds.iter().enumerate() {
        let v = tail_value(k as isize);
        if v.is_null() {
            return fail();
        }
        let at = blk.add(tail_off + 4 * k);
        let t = type_ptr(api, v);
        if kind == 0 && t == float_t {
            let x = (api.as_f64)(v);
            if x.is_finite() && (x as f32).is_infinite() {
                return fail();      // struct's 'f' refuses it: the Python path decides
            }
            std::ptr::write_unaligned(at as *mut f32, x as f32);
        } else if kind != 0 && t == int_t {
            let x = (api.as_i64)(v);
            let ok = if kind == 1 { (i32::MIN as i64..=i32::MAX as i64).contains(&x) } else { (0..=u32::MAX as i64).contains(&x) };
            if !ok || !(api.occurred)().is_null() {
                return fail();
            }
            std::ptr::write_unaligned(at as *mut u32, x as u32);
        } else {
            return fail();
        }
    }
    std::ptr::write_bytes(blk.add(dev_off), 0, stream_off - dev_off);      // device and its padding
    std::ptr::write_unaligned(blk.add(dev_off) as *mut i32, device);
    std::ptr::write_unaligned(blk.add(stream_off) as *mut u64, stream);
    let save = (api.save)();
    let rc = packed(blk);
    (api.restore)(save);
    rc
}

// Run by tests/test_abi.py (`cargo test` on a crate of this file alone, no GPU: the context is a
// wrapper made without a CUDA call and borrowing a tensor makes none).
#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn context() -> Arc<cuda_core::Context> {
        // owned: false, so dropping it releases nothing
        unsafe { cuda_core::Context::borrow_raw(std::ptr::null_mut(), 0, 0) }
    }

    /// A 4-D f32 descriptor of its own address (array `i`).
    fn desc(i: usize) -> TpTensor {
        let mut d = TpTensor { data: 0x7f00_0000_0000 + (i as u64) * 0x10_0000, ndim: 4,
                               shape: [0; TP_MAX_DIMS], strides: [0; TP_MAX_DIMS], dtype: TP_F32 };
        d.shape[..4].copy_from_slice(&[16, 128, 2, 64]);
        d.strides[..4].copy_from_slice(&[128 * 2 * 64, 2 * 64, 64, 1]);
        d
    }

    fn call(ds: &[TpTensor], ctx: &Arc<cuda_core::Context>) -> Vec<Arc<Tensor<f32>>> {
        ds.iter().map(|d| unsafe { borrow::<f32>(d, ctx) }).collect()
    }

    #[test]
    fn a_kernel_s_arrays_are_borrowed_once_while_they_fit_the_slots() {
        let ctx = context();
        // 17: tg_mamba2 compute_da_db_dc_ddt_kernel, which 16 slots re-made on every call
        for n in [2, 17, 40, TENSORS_PER_THREAD] {
            let ds: Vec<TpTensor> = (1000 * n..1000 * n + n).map(desc).collect();
            let first = call(&ds, &ctx);
            for _ in 0..3 {
                let again = call(&ds, &ctx);
                assert!(first.iter().zip(&again).all(|(a, b)| Arc::ptr_eq(a, b)), "{n} arrays re-made");
            }
        }
    }

    #[test]
    fn another_descriptor_gets_its_own_tensor() {
        let ctx = context();
        let d = desc(1);
        let t = unsafe { borrow::<f32>(&d, &ctx) };
        assert_eq!(t.shape(), &[16, 128, 2, 64]);
        let mut other = d;
        other.strides[0] *= 2;
        let u = unsafe { borrow::<f32>(&other, &ctx) };
        assert!(!Arc::ptr_eq(&t, &u));
        assert_eq!(u.strides(), &[2 * 128 * 2 * 64, 2 * 64, 64, 1]);
        let mut shorter = d;
        shorter.shape[1] = 64;
        let v = unsafe { borrow::<f32>(&shorter, &ctx) };
        assert_eq!(v.shape(), &[16, 64, 2, 64]);
        // the same memory read as another element type: a tensor of that type, in the same slot
        let h = unsafe { borrow::<half::bf16>(&d, &ctx) };
        assert_eq!(h.shape(), &[16, 128, 2, 64]);
        let t2 = unsafe { borrow::<f32>(&d, &ctx) };
        assert!(!Arc::ptr_eq(&t, &t2) && t2.shape() == t.shape());
        // another context (device): its own tensor
        let ctx1 = unsafe { cuda_core::Context::borrow_raw(std::ptr::null_mut(), 1, 1) };
        assert!(!Arc::ptr_eq(&t2, &unsafe { borrow::<f32>(&d, &ctx1) }));
    }

    #[test]
    fn more_arrays_than_slots_are_still_borrowed_right() {
        let ctx = context();
        let ds: Vec<TpTensor> = (0..TENSORS_PER_THREAD + 3).map(|i| {
            let mut d = desc(5000 + i);
            d.shape[0] = 1 + i as i64;
            d
        }).collect();
        for _ in 0..2 {
            for (d, t) in ds.iter().zip(call(&ds, &ctx)) {
                assert_eq!(t.shape()[0] as i64, d.shape[0]);
            }
        }
    }

    #[test]
    fn scratch_is_registered_per_device_and_slot() {
        let dev = 200;      // no other test registers scratch there
        assert_eq!(scratch_slot(dev, 0), None);
        assert_eq!(tp_set_scratch(dev, 0x7f00_00ab_c000, 32), TP_OK);
        assert_eq!(scratch_slot(dev, 5), Some(0x7f00_00ab_c000 + 5 * 256));
        assert_eq!(scratch_slot(dev, 32), None);        // past the registered slots: declined
        assert_eq!(scratch_slot(dev + 1, 0), None);     // another device has its own
        assert_eq!(scratch_slot(-1, 0), None);
        for (d, a, n) in [(-1, 1u64, 1u64), (TP_MAX_DEVICE + 1, 1, 1), (dev, 1, 0), (dev, 0, 1)] {
            assert_eq!(tp_set_scratch(d, a, n), TP_ERR_BAD_ARGUMENT);
        }
        assert_eq!(scratch_slot(dev, 5), Some(0x7f00_00ab_c000 + 5 * 256));  // a refusal changes nothing
        assert_eq!(tp_set_scratch(dev, 0, 0), TP_OK);
        assert_eq!(scratch_slot(dev, 0), None);
    }

    /// CPU time of `borrow` per call of n arrays on the same descriptors (a loop); run with
    /// `cargo test --release -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn time_borrow() {
        let ctx = context();
        for n in [2usize, 7, 13, 16, 17, 24, 32] {
            let ds: Vec<TpTensor> = (100 * n..100 * n + n).map(desc).collect();
            let iters = 100_000usize;
            for _ in 0..100 { call(&ds, &ctx); }
            let t0 = Instant::now();
            for _ in 0..iters {
                for d in &ds {
                    std::hint::black_box(unsafe { borrow::<f32>(std::hint::black_box(d), &ctx) });
                }
            }
            let us = t0.elapsed().as_secs_f64() * 1e6 / iters as f64;
            println!("borrow, {n:2} arrays: {us:7.3} µs per call, {:6.3} µs per array", us / n as f64);
        }
    }
}
