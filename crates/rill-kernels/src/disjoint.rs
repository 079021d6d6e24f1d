//! The output pointer shared by the tasks of one [`Pool::run`](crate::Pool::run)
//! when each task writes its own elements of one buffer (a row block, a column
//! block, a tile): the conv kernels' outputs, the Winograd scratch, the small GEMM's
//! rows.

use std::marker::PhantomData;

/// A raw pointer to a `&'a mut [f32]` whose elements the tasks of one pool call
/// write disjointly. Copy it into the task closure; each task writes only the
/// elements it was given.
#[derive(Clone, Copy)]
pub struct DisjointOut<'a> {
    ptr: *mut f32,
    _life: PhantomData<&'a mut [f32]>,
}

// SAFETY: the pointer is only dereferenced through `at` (an `unsafe fn` whose
// contract is that concurrent tasks write disjoint elements inside the buffer), and
// the buffer outlives `'a`, which spans the pool call.
unsafe impl Send for DisjointOut<'_> {}
// SAFETY: as for `Send`: shared use only hands out element pointers whose writes the
// callers keep disjoint.
unsafe impl Sync for DisjointOut<'_> {}

impl<'a> DisjointOut<'a> {
    /// The pointer to `out`'s first element, borrowing `out` for `'a`.
    pub fn new(out: &'a mut [f32]) -> DisjointOut<'a> {
        DisjointOut {
            ptr: out.as_mut_ptr(),
            _life: PhantomData,
        }
    }

    /// A null pointer (a placeholder in a fixed-size array; never dereferenced).
    pub fn null() -> DisjointOut<'a> {
        DisjointOut {
            ptr: std::ptr::null_mut(),
            _life: PhantomData,
        }
    }

    /// The element `offset` (a method, so closures capture the whole `Sync` wrapper
    /// rather than its raw-pointer field).
    ///
    /// # Safety
    /// `offset` lies inside the buffer, and no other task writes or reads the
    /// elements the caller writes through the result during the pool call.
    #[inline]
    pub unsafe fn at(self, offset: usize) -> *mut f32 {
        // SAFETY: in bounds by the caller's contract.
        unsafe { self.ptr.add(offset) }
    }
}
