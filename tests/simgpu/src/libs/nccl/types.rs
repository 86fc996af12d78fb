//! `ncclDataType_t`, `ncclRedOp_t` and the collectives, as `nccl.h` numbers and NCCL names
//! them.

use std::ffi::c_int;

/// The `ncclDataType_t`s the simulator computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataType {
    Int8 = 0,
    Uint8 = 1,
    Int32 = 2,
    Uint32 = 3,
    Int64 = 4,
    Uint64 = 5,
    Float16 = 6,
    Float32 = 7,
    Float64 = 8,
    Bfloat16 = 9,
}

/// Every `DataType`, by its number.
pub const DATA_TYPES: [DataType; 10] = [
    DataType::Int8,
    DataType::Uint8,
    DataType::Int32,
    DataType::Uint32,
    DataType::Int64,
    DataType::Uint64,
    DataType::Float16,
    DataType::Float32,
    DataType::Float64,
    DataType::Bfloat16,
];

/// The `ncclDataType_t`s NCCL 2.28 has and the simulator does not compute: refused by name.
pub const NOT_SIMULATED: [(c_int, &str); 2] = [(10, "ncclFloat8e4m3"), (11, "ncclFloat8e5m2")];

/// Why a data type was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// One of [`NOT_SIMULATED`]: its name.
    NotSimulated(&'static str),
    /// No `ncclDataType_t` at all.
    Invalid,
}

impl DataType {
    /// The data type numbered `raw`.
    pub fn from_raw(raw: c_int) -> Result<DataType, Refused> {
        if let Some((_, name)) = NOT_SIMULATED.iter().find(|(t, _)| *t == raw) {
            return Err(Refused::NotSimulated(name));
        }
        (usize::try_from(raw).ok())
            .and_then(|i| DATA_TYPES.get(i).copied())
            .ok_or(Refused::Invalid)
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DataType::Int8 | DataType::Uint8 => 1,
            DataType::Float16 | DataType::Bfloat16 => 2,
            DataType::Int32 | DataType::Uint32 | DataType::Float32 => 4,
            DataType::Int64 | DataType::Uint64 | DataType::Float64 => 8,
        }
    }

    /// The suffix of NCCL's kernel names (`f32`, `bf16`, `i8`, ...).
    pub fn kernel_suffix(self) -> &'static str {
        match self {
            DataType::Int8 => "i8",
            DataType::Uint8 => "u8",
            DataType::Int32 => "i32",
            DataType::Uint32 => "u32",
            DataType::Int64 => "i64",
            DataType::Uint64 => "u64",
            DataType::Float16 => "f16",
            DataType::Float32 => "f32",
            DataType::Float64 => "f64",
            DataType::Bfloat16 => "bf16",
        }
    }
}

/// The built-in `ncclRedOp_t`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedOp {
    Sum = 0,
    Prod = 1,
    Max = 2,
    Min = 3,
    Avg = 4,
}

/// Every `RedOp`, by its number.
pub const RED_OPS: [RedOp; 5] = [RedOp::Sum, RedOp::Prod, RedOp::Max, RedOp::Min, RedOp::Avg];

impl RedOp {
    /// The operation numbered `raw`, if it is built in (NCCL's `ncclNumOps` and up are made by
    /// `ncclRedOpCreatePreMulSum`, which the simulator does not have).
    pub fn from_raw(raw: c_int) -> Option<RedOp> {
        usize::try_from(raw)
            .ok()
            .and_then(|i| RED_OPS.get(i).copied())
    }

    /// Its name in NCCL's kernel names.
    pub fn kernel_name(self) -> &'static str {
        match self {
            RedOp::Sum => "Sum",
            RedOp::Prod => "Prod",
            RedOp::Max => "MinMax",
            RedOp::Min => "MinMax",
            RedOp::Avg => "SumPostDiv",
        }
    }
}

/// The collectives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    AllReduce = 0,
    AllGather = 1,
    ReduceScatter = 2,
    Broadcast = 3,
}

/// Every `Function`, by its number (as the simulator's wire carries it).
pub const FUNCTIONS: [Function; 4] = [
    Function::AllReduce,
    Function::AllGather,
    Function::ReduceScatter,
    Function::Broadcast,
];

impl Function {
    /// As NCCL's `ncclFuncToString` names it in its INFO lines (`AllReduce`).
    pub fn name(self) -> &'static str {
        match self {
            Function::AllReduce => "AllReduce",
            Function::AllGather => "AllGather",
            Function::ReduceScatter => "ReduceScatter",
            Function::Broadcast => "Broadcast",
        }
    }

    /// The API call (`ncclAllReduce`): what `faults.wrong_results` names.
    pub fn call(self) -> &'static str {
        match self {
            Function::AllReduce => "ncclAllReduce",
            Function::AllGather => "ncclAllGather",
            Function::ReduceScatter => "ncclReduceScatter",
            Function::Broadcast => "ncclBroadcast",
        }
    }

    /// Its name in `faults.nccl_hang` (`all_reduce`).
    pub fn fault_name(self) -> &'static str {
        match self {
            Function::AllReduce => "all_reduce",
            Function::AllGather => "all_gather",
            Function::ReduceScatter => "reduce_scatter",
            Function::Broadcast => "broadcast",
        }
    }

    /// Whether it reduces (its `op` matters).
    pub fn reduces(self) -> bool {
        matches!(self, Function::AllReduce | Function::ReduceScatter)
    }
}

/// The values `faults.nccl_hang` may take (empty: none hangs).
pub const HANG_NAMES: [&str; 5] = [
    "",
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "broadcast",
];
