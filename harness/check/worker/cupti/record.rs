//! The Activity API's kernel records: the buffers handed to CUPTI and back, the walk over the
//! records in one, and the fields decoded from a kernel record.
//!
//! Kernel records (`CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`) come in the newest
//! `CUpti_ActivityKernelN` the library knows: N = 8 for CUDA 11.8, 9 for 12.x, 10 for 13.0,
//! 11 for 13.1 and 13.2, 12 for 13.3, 13 for 13.4. Each version only appends fields to the one
//! before (from Kernel3 on; cudarc's bindings of every CUDA version declare `kind` through
//! `reserved0` identically), so the fields read here sit at the same offsets in all of them:
//! `kind` 0, `start` 16, `end` 24, `deviceId` 40, `contextId` 44, `streamId` 48,
//! `correlationId` 92, `name` 104. The unit tests assert it with `offset_of!` over Kernel8 and
//! Kernel9 (cudarc's bindings, bindgen'd from NVIDIA's headers; the 11.8 and 12.9 headers give
//! the same offsets) and over Kernel10 to Kernel13 as cudarc binds them for CUDA 13.x.

use super::sys::{self, Api};
use std::alloc::Layout;
use std::ffi::{c_char, c_void, CStr};
use std::sync::{Mutex, OnceLock, PoisonError};

/// Byte offsets of the kernel record's fields this check reads: the same in
/// `CUpti_ActivityKernel3` through `CUpti_ActivityKernel13` (see the module's comment).
mod field {
    pub const KIND: usize = 0;
    pub const START: usize = 16;
    pub const END: usize = 24;
    pub const DEVICE_ID: usize = 40;
    pub const CONTEXT_ID: usize = 44;
    pub const STREAM_ID: usize = 48;
    pub const CORRELATION_ID: usize = 92;
    pub const NAME: usize = 104;
    /// The bytes up to and including `name`: every kernel record is longer.
    pub const PREFIX: usize = NAME + 8;
}

/// Size of each activity buffer handed to CUPTI.
const BUFFER_BYTES: usize = 8 << 20;

/// The buffers' layout: CUPTI needs 8-byte alignment.
const BUFFER_LAYOUT: Layout = match Layout::from_size_align(BUFFER_BYTES, 8) {
    Ok(layout) => layout,
    Err(_) => panic!("8 MiB aligned to 8 is a valid layout"),
};

/// One kernel record as the Activity API delivered it.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelRecord {
    /// The kernel's name (`vector_add`); `None` if CUPTI gave none.
    pub name: Option<String>,
    /// GPU timestamps, ns.
    pub start: u64,
    pub end: u64,
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub correlation_id: u32,
}

/// A kernel record's fields, decoded from its bytes; the name still a pointer into CUPTI's
/// memory.
#[derive(Debug, Clone, Copy, PartialEq)]
struct RawKernel {
    start: u64,
    end: u64,
    device_id: u32,
    context_id: u32,
    stream_id: u32,
    correlation_id: u32,
    name: usize,
}

/// The kernel record at the start of `bytes` (`CUPTI_ACTIVITY_KIND_KERNEL` or
/// `CONCURRENT_KERNEL`, any layout from Kernel3 on); `None` for any other kind of record, or
/// one too short to be a kernel record.
fn decode(bytes: &[u8]) -> Option<RawKernel> {
    fn read<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
        bytes.get(at..at + N)?.try_into().ok()
    }
    let u32_at = |at| read::<4>(bytes, at).map(u32::from_ne_bytes);
    let u64_at = |at| read::<8>(bytes, at).map(u64::from_ne_bytes);
    let kind = u32_at(field::KIND)?;
    if kind != sys::KIND_CONCURRENT_KERNEL && kind != sys::KIND_KERNEL {
        return None;
    }
    Some(RawKernel {
        start: u64_at(field::START)?,
        end: u64_at(field::END)?,
        device_id: u32_at(field::DEVICE_ID)?,
        context_id: u32_at(field::CONTEXT_ID)?,
        stream_id: u32_at(field::STREAM_ID)?,
        correlation_id: u32_at(field::CORRELATION_ID)?,
        name: read::<8>(bytes, field::NAME).map(usize::from_ne_bytes)?,
    })
}

impl RawKernel {
    /// The record with its name copied out of CUPTI's memory.
    ///
    /// # Safety
    /// `self.name` must be null or point to a NUL-terminated string (CUPTI keeps kernel names
    /// alive at least while the buffer is being read).
    unsafe fn read(self) -> KernelRecord {
        let name = (self.name != 0).then(|| {
            // SAFETY: by the caller's contract.
            unsafe { CStr::from_ptr(self.name as *const c_char) }
                .to_string_lossy()
                .into_owned()
        });
        KernelRecord {
            name,
            start: self.start,
            end: self.end,
            device_id: self.device_id,
            context_id: self.context_id,
            stream_id: self.stream_id,
            correlation_id: self.correlation_id,
        }
    }
}

/// What the buffer-completed callback collected.
#[derive(Debug, Default)]
pub struct Collected {
    /// Records of every kind seen.
    pub records: usize,
    pub kernels: Vec<KernelRecord>,
    /// The first error of `cuptiActivityGetNextRecord` other than "no more records".
    pub error: Option<sys::Status>,
}

/// Where CUPTI's callbacks (on its own threads) leave their results: the function to walk a
/// buffer with, and what was collected so far.
static COLLECTED: Mutex<(Option<sys::NextRecord>, Collected)> = Mutex::new((
    None,
    Collected {
        records: 0,
        kernels: Vec::new(),
        error: None,
    },
));

/// The status of the one `cuptiActivityRegisterCallbacks` call of this process.
static REGISTERED: OnceLock<sys::Status> = OnceLock::new();

/// Starts collecting afresh, walking buffers with `api`'s `cuptiActivityGetNextRecord`, and
/// registers the buffer callbacks with `cuptiActivityRegisterCallbacks` the first time (the
/// benchmarks record many times in one process; the callbacks stay the same); its status.
pub fn register(api: &Api) -> sys::Status {
    *COLLECTED.lock().unwrap_or_else(PoisonError::into_inner) =
        (Some(api.next_record), Collected::default());
    *REGISTERED.get_or_init(|| {
        // SAFETY: the callbacks follow CUPTI's buffer contract and share state only through a
        // Mutex.
        unsafe { (api.register_callbacks)(Some(buffer_requested), Some(buffer_completed)) }
    })
}

/// What the buffers delivered so far held; collecting goes on afresh.
pub fn take() -> Collected {
    std::mem::take(&mut COLLECTED.lock().unwrap_or_else(PoisonError::into_inner).1)
}

/// Walks the records CUPTI wrote into `buffer`, keeping the kernel records.
///
/// # Safety
/// `buffer` must hold `valid` initialised bytes of activity records and `next` must behave as
/// `cuptiActivityGetNextRecord`: hand out records inside the buffer, each whole.
unsafe fn walk(next: sys::NextRecord, buffer: *mut u8, valid: usize, into: &mut Collected) {
    let end = buffer as usize + valid;
    let mut record: *mut u8 = std::ptr::null_mut();
    loop {
        // SAFETY: by the caller's contract; `record` is the previous record or null.
        let status = unsafe { next(buffer, valid, &mut record) };
        match status {
            sys::SUCCESS => {}
            sys::MAX_LIMIT_REACHED => return,
            error => {
                into.error.get_or_insert(error);
                return;
            }
        }
        let at = record as usize;
        if at < buffer as usize || at >= end {
            return; // not a record of this buffer: nothing more to read safely
        }
        into.records += 1;
        // SAFETY: [at, end) lies inside the buffer's valid, initialised bytes.
        let bytes = unsafe { std::slice::from_raw_parts(record, (end - at).min(field::PREFIX)) };
        if let Some(kernel) = decode(bytes) {
            // SAFETY: the name pointer of a kernel record CUPTI just delivered.
            into.kernels.push(unsafe { kernel.read() });
        }
    }
}

/// CUPTI asks for a buffer: 8 MiB, zeroed (so every byte is initialised), aligned to 8.
unsafe extern "C" fn buffer_requested(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_num_records: *mut usize,
) {
    // SAFETY: BUFFER_LAYOUT has a non-zero size.
    let memory = unsafe { std::alloc::alloc_zeroed(BUFFER_LAYOUT) };
    // SAFETY: CUPTI passes three valid pointers to write. A null buffer (allocation failed)
    // tells CUPTI to drop records.
    unsafe {
        *buffer = memory;
        *size = if memory.is_null() { 0 } else { BUFFER_BYTES };
        *max_num_records = 0;
    }
}

/// CUPTI hands a buffer back: collect its kernel records, then free it.
unsafe extern "C" fn buffer_completed(
    _context: *mut c_void,
    _stream_id: u32,
    buffer: *mut u8,
    _size: usize,
    valid_size: usize,
) {
    if buffer.is_null() {
        return;
    }
    {
        let mut state = COLLECTED.lock().unwrap_or_else(PoisonError::into_inner);
        let (next, collected) = &mut *state;
        if let Some(next) = *next {
            // SAFETY: a buffer from `buffer_requested` (zeroed, BUFFER_BYTES long) in which
            // CUPTI wrote `valid_size` bytes of records.
            unsafe { walk(next, buffer, valid_size.min(BUFFER_BYTES), collected) };
        }
    }
    // SAFETY: every buffer CUPTI returns came from `buffer_requested`, with BUFFER_LAYOUT.
    unsafe { std::alloc::dealloc(buffer, BUFFER_LAYOUT) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::cupti::sys as cusys;
    use std::ffi::CString;
    use std::mem::{offset_of, size_of};

    /// Declares `CUpti_ActivityKernel10` to `13` field for field as cudarc binds them for CUDA
    /// 13.x: the fields in brackets are Kernel9's, and each struct is the one before it with the
    /// fields listed after its name appended, as in cudarc's bindings.
    macro_rules! kernel_records {
        ([$($before:tt)*]) => {};
        (
            [$($before:tt)*]
            $(#[$doc:meta])*
            $name:ident { $($field:ident: $t:ty),* $(,)? }
            $($rest:tt)*
        ) => {
            $(#[$doc])*
            #[repr(C, packed(8))]
            #[allow(non_snake_case, dead_code)] // C names; only the layout is used
            struct $name {
                $($before)*
                $($field: $t,)*
            }
            kernel_records!([$($before)* $($field: $t,)*] $($rest)*);
        };
    }

    kernel_records!(
        [
            kind: cusys::CUpti_ActivityKind,
            cacheConfig: cusys::CUpti_ActivityKernel9__bindgen_ty_1,
            sharedMemoryConfig: u8,
            registersPerThread: u16,
            partitionedGlobalCacheRequested: cusys::CUpti_ActivityPartitionedGlobalCacheConfig,
            partitionedGlobalCacheExecuted: cusys::CUpti_ActivityPartitionedGlobalCacheConfig,
            start: u64,
            end: u64,
            completed: u64,
            deviceId: u32,
            contextId: u32,
            streamId: u32,
            gridX: i32,
            gridY: i32,
            gridZ: i32,
            blockX: i32,
            blockY: i32,
            blockZ: i32,
            staticSharedMemory: i32,
            dynamicSharedMemory: i32,
            localMemoryPerThread: u32,
            localMemoryTotal: u32,
            correlationId: u32,
            gridId: i64,
            name: *const c_char,
            reserved0: *mut c_void,
            queued: u64,
            submitted: u64,
            launchType: u8,
            isSharedMemoryCarveoutRequested: u8,
            sharedMemoryCarveoutRequested: u8,
            padding: u8,
            sharedMemoryExecuted: u32,
            graphNodeId: u64,
            shmemLimitConfig: cusys::CUpti_FuncShmemLimitConfig,
            graphId: u32,
            pAccessPolicyWindow: *mut cudarc::driver::sys::CUaccessPolicyWindow,
            channelID: u32,
            channelType: cusys::CUpti_ChannelType,
            clusterX: u32,
            clusterY: u32,
            clusterZ: u32,
            clusterSchedulingPolicy: u32,
            localMemoryTotal_v2: u64,
            maxPotentialClusterSize: u32,
            maxActiveClusters: u32,
        ]
        /// `CUpti_ActivityKernel10` (CUDA 13.0).
        Kernel10 { isDeviceLaunched: u8, padding3: [u8; 7] }
        /// `CUpti_ActivityKernel11` (CUDA 13.1 and 13.2).
        Kernel11 { priority: i32, padding4: u32 }
        /// `CUpti_ActivityKernel12` (CUDA 13.3).
        Kernel12 { executionModel: u32, padding5: u32 }
        /// `CUpti_ActivityKernel13` (CUDA 13.4).
        Kernel13 { sourceGraphId: u32, padding6: u32, sourceGraphNodeId: u64 }
    );

    /// Where one layout puts the fields the check reads.
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct RecordLayout {
        version: u32,
        size: usize,
        kind: usize,
        start: usize,
        end: usize,
        device_id: usize,
        context_id: usize,
        stream_id: usize,
        correlation_id: usize,
        name: usize,
    }

    /// The [`RecordLayout`] of kernel record type `$t`, CUPTI's version `$version` of it.
    macro_rules! layout {
        ($version:literal, $t:ty) => {
            RecordLayout {
                version: $version,
                size: size_of::<$t>(),
                kind: offset_of!($t, kind),
                start: offset_of!($t, start),
                end: offset_of!($t, end),
                device_id: offset_of!($t, deviceId),
                context_id: offset_of!($t, contextId),
                stream_id: offset_of!($t, streamId),
                correlation_id: offset_of!($t, correlationId),
                name: offset_of!($t, name),
            }
        };
    }

    /// Every kernel record CUPTI of CUDA 11.8, 12.x and 13.0-13.4 hands out.
    fn layouts() -> [RecordLayout; 6] {
        [
            layout!(8, cusys::CUpti_ActivityKernel8),
            layout!(9, cusys::CUpti_ActivityKernel9),
            layout!(10, Kernel10),
            layout!(11, Kernel11),
            layout!(12, Kernel12),
            layout!(13, Kernel13),
        ]
    }

    #[test]
    fn the_fields_read_sit_at_the_same_offsets_in_every_layout() {
        for layout in layouts() {
            let at = |offset| (layout.version, offset);
            assert_eq!(at(layout.kind), at(field::KIND));
            assert_eq!(at(layout.start), at(field::START));
            assert_eq!(at(layout.end), at(field::END));
            assert_eq!(at(layout.device_id), at(field::DEVICE_ID));
            assert_eq!(at(layout.context_id), at(field::CONTEXT_ID));
            assert_eq!(at(layout.stream_id), at(field::STREAM_ID));
            assert_eq!(at(layout.correlation_id), at(field::CORRELATION_ID));
            assert_eq!(at(layout.name), at(field::NAME));
            assert!(layout.size >= field::PREFIX, "{layout:?}");
        }
        // NVIDIA's 11.8 and 12.9 headers (compiled with offsetof) give 200 and 208 bytes.
        let sizes: Vec<usize> = layouts().iter().map(|l| l.size).collect();
        assert_eq!(sizes, [200, 208, 216, 224, 232, 248]);
    }

    /// The fields of one record.
    #[derive(Debug, Clone, Copy)]
    struct Fields {
        kind: u32,
        start: u64,
        end: u64,
        name: usize,
    }

    /// A record of `layout` holding `f`, every other byte 0xEE.
    fn record(layout: &RecordLayout, f: Fields) -> Vec<u8> {
        let mut bytes = vec![0xEE; layout.size];
        let mut put = |at: usize, value: &[u8]| bytes[at..at + value.len()].copy_from_slice(value);
        put(layout.kind, &f.kind.to_ne_bytes());
        put(layout.start, &f.start.to_ne_bytes());
        put(layout.end, &f.end.to_ne_bytes());
        put(layout.device_id, &3u32.to_ne_bytes());
        put(layout.context_id, &4u32.to_ne_bytes());
        put(layout.stream_id, &7u32.to_ne_bytes());
        put(
            layout.correlation_id,
            &(1000 + layout.version).to_ne_bytes(),
        );
        put(layout.name, &f.name.to_ne_bytes());
        bytes
    }

    #[test]
    fn decodes_a_hand_built_record_of_each_layout() {
        let name = CString::new("vector_add").unwrap();
        for layout in layouts() {
            for kind in [
                cusys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL as u32,
                3,
            ] {
                let fields = Fields {
                    kind,
                    start: 1_000_000 + u64::from(layout.version),
                    end: 1_012_345,
                    name: name.as_ptr() as usize,
                };
                let raw = decode(&record(&layout, fields)).expect("a kernel record");
                assert_eq!(
                    raw,
                    RawKernel {
                        start: fields.start,
                        end: fields.end,
                        device_id: 3,
                        context_id: 4,
                        stream_id: 7,
                        correlation_id: 1000 + layout.version,
                        name: fields.name,
                    },
                    "layout {}",
                    layout.version
                );
                // SAFETY: the name points at `name`, alive here.
                let read = unsafe { raw.read() };
                assert_eq!(read.name.as_deref(), Some("vector_add"));
            }
        }
    }

    #[test]
    fn other_records_and_short_ones_are_not_kernels() {
        let layout = layouts()[1];
        let memcpy = Fields {
            kind: 1,
            start: 1,
            end: 2,
            name: 0,
        };
        assert_eq!(decode(&record(&layout, memcpy)), None);
        let kernel = Fields { kind: 10, ..memcpy };
        let whole = record(&layout, kernel);
        assert!(decode(&whole[..field::PREFIX]).is_some());
        assert_eq!(decode(&whole[..field::PREFIX - 1]), None);
        assert_eq!(decode(&[]), None);
        // SAFETY: a null name is never dereferenced.
        let unnamed = unsafe { decode(&whole).unwrap().read() };
        assert_eq!(unnamed.name, None);
    }

    /// Records in the walk tests are this far apart.
    const STRIDE: usize = 256;

    /// `cuptiActivityGetNextRecord` over records `STRIDE` bytes apart.
    unsafe extern "C" fn strided_next(
        buffer: *mut u8,
        valid: usize,
        record: *mut *mut u8,
    ) -> sys::Status {
        // SAFETY: `record` is valid to read and write, as CUPTI's contract says.
        let previous = unsafe { *record };
        let next = if previous.is_null() {
            buffer
        } else {
            previous.wrapping_add(STRIDE)
        };
        if next as usize + STRIDE > buffer as usize + valid {
            return 12;
        }
        // SAFETY: as above.
        unsafe { *record = next };
        0
    }

    /// `cuptiActivityGetNextRecord` failing with `CUPTI_ERROR_INVALID_KIND` (21).
    unsafe extern "C" fn failing_next(_: *mut u8, _: usize, _: *mut *mut u8) -> sys::Status {
        21
    }

    /// A buffer of `records`, `STRIDE` bytes apart, 8-byte aligned.
    fn buffer(records: &[Vec<u8>]) -> Vec<u64> {
        let mut words = vec![0u64; records.len() * STRIDE / 8];
        // SAFETY: viewing initialised u64s as bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 8)
        };
        for (i, r) in records.iter().enumerate() {
            bytes[i * STRIDE..i * STRIDE + r.len()].copy_from_slice(r);
        }
        words
    }

    #[test]
    fn walks_a_buffer_keeping_the_kernel_records() {
        let (add, other) = (
            CString::new("vector_add").unwrap(),
            CString::new("other").unwrap(),
        );
        let [k8, k9, .., k13] = layouts();
        let kernel = |name: &CString, start| Fields {
            kind: 10,
            start,
            end: start + 500,
            name: name.as_ptr() as usize,
        };
        let mut words = buffer(&[
            record(&k8, kernel(&other, 10)),
            record(
                &k9,
                Fields {
                    kind: 1,
                    start: 0,
                    end: 0,
                    name: 0,
                },
            ),
            record(&k13, kernel(&add, 2_000)),
        ]);
        let mut collected = Collected::default();
        let valid = words.len() * 8;
        // SAFETY: the buffer holds `valid` initialised bytes; strided_next stays inside them.
        unsafe {
            walk(
                strided_next,
                words.as_mut_ptr().cast(),
                valid,
                &mut collected,
            )
        };
        assert_eq!(collected.records, 3);
        assert_eq!(collected.error, None);
        let names: Vec<_> = collected.kernels.iter().map(|k| k.name.clone()).collect();
        assert_eq!(
            names,
            [Some("other".to_owned()), Some("vector_add".to_owned())]
        );
        assert_eq!(collected.kernels[1].start, 2_000);
        assert_eq!(collected.kernels[1].correlation_id, 1013);
    }

    #[test]
    fn a_walk_keeps_the_first_error() {
        let mut collected = Collected::default();
        let mut words = vec![0u64; 4];
        // SAFETY: failing_next reads nothing.
        unsafe { walk(failing_next, words.as_mut_ptr().cast(), 32, &mut collected) };
        assert_eq!((collected.records, collected.error), (0, Some(21)));
    }
}
