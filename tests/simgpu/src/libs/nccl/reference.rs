//! The simulator's own reference for the collectives, on the host: every rank's output from a
//! snapshot of every rank's input, as little-endian bytes.
//!
//! A reduction folds the ranks in ring order, `((x[ring[0]] op x[ring[1]]) op x[ring[2]]) ...`,
//! rounding to the data type at every step as NCCL's ring does (so a floating-point sum over
//! several ranks need not equal the exactly rounded one: a checker needs a tolerance, as on
//! hardware). Integers wrap. `ncclAvg` is, as in NCCL, a sum followed by a truncating division
//! by the rank count for integers (`SumPostDiv`), and for floating types a sum of each input
//! times `1/n` rounded to the type (`PreMulSum`). `ncclMax`/`ncclMin` keep the first of equal
//! values.

use super::types::{DataType, Function, RedOp};
use half::{bf16, f16};

/// What a collective computes: the function, its element type and operation, the count the
/// caller passed (`count`, `sendcount` or `recvcount`), the ranks and the broadcast's root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub function: Function,
    pub datatype: DataType,
    pub op: RedOp,
    pub count: usize,
    pub nranks: usize,
    pub root: usize,
}

impl Shape {
    /// Elements of each rank's input.
    pub fn input_elements(&self) -> usize {
        match self.function {
            Function::ReduceScatter => self.nranks * self.count,
            _ => self.count,
        }
    }

    /// Elements of each rank's output.
    pub fn output_elements(&self) -> usize {
        match self.function {
            Function::AllGather => self.nranks * self.count,
            _ => self.count,
        }
    }

    /// Whether rank `rank`'s input is read (a broadcast reads only its root's).
    pub fn reads(&self, rank: usize) -> bool {
        self.function != Function::Broadcast || rank == self.root
    }
}

/// Every rank's output, from every rank's input (`inputs[r]`: rank `r`'s bytes, empty where
/// [`Shape::reads`] says it is not read), reducing in the order of `ring`.
pub fn outputs(shape: &Shape, inputs: &[Vec<u8>], ring: &[usize]) -> Vec<Vec<u8>> {
    let n = shape.nranks;
    let bytes = shape.count * shape.datatype.size();
    match shape.function {
        Function::AllReduce => {
            let all: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
            vec![reduce(shape.datatype, shape.op, &all, ring); n]
        }
        Function::Broadcast => vec![inputs[shape.root].clone(); n],
        Function::AllGather => vec![inputs.concat(); n],
        Function::ReduceScatter => (0..n)
            .map(|r| {
                let blocks: Vec<&[u8]> = (inputs.iter())
                    .map(|input| &input[r * bytes..(r + 1) * bytes])
                    .collect();
                reduce(shape.datatype, shape.op, &blocks, ring)
            })
            .collect(),
    }
}

/// An element type the reference reduces.
trait Element: Copy + PartialOrd {
    const SIZE: usize;
    fn read(bytes: &[u8]) -> Self;
    fn write(self, out: &mut Vec<u8>);
    fn add(self, other: Self) -> Self;
    fn mul(self, other: Self) -> Self;
    /// `ncclAvg` of `terms` (in ring order).
    fn average(terms: &[Self]) -> Self;
}

macro_rules! integer {
    ($t:ty) => {
        impl Element for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn read(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("one element"))
            }
            fn write(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn add(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            fn mul(self, other: Self) -> Self {
                self.wrapping_mul(other)
            }
            fn average(terms: &[Self]) -> Self {
                let sum = (terms[1..].iter()).fold(terms[0], |acc, x| acc.wrapping_add(*x));
                (i128::from(sum) / terms.len() as i128) as $t
            }
        }
    };
}

integer!(i8);
integer!(u8);
integer!(i32);
integer!(u32);
integer!(i64);
integer!(u64);

macro_rules! float {
    ($t:ty, $to:expr, $from:expr) => {
        impl Element for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn read(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("one element"))
            }
            fn write(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn add(self, other: Self) -> Self {
                $from($to(self) + $to(other))
            }
            fn mul(self, other: Self) -> Self {
                $from($to(self) * $to(other))
            }
            fn average(terms: &[Self]) -> Self {
                let scale: Self = $from(1.0 / terms.len() as f64);
                let scaled = |x: &Self| x.mul(scale);
                (terms[1..].iter()).fold(scaled(&terms[0]), |acc, x| acc.add(scaled(x)))
            }
        }
    };
}

float!(f16, f16::to_f64, f16::from_f64);
float!(bf16, bf16::to_f64, bf16::from_f64);
float!(f32, f64::from, |x: f64| x as f32);
float!(f64, |x: f64| x, |x: f64| x);

/// The element-wise reduction of `blocks` (one per rank, by rank) under `op`, in ring order.
fn reduce(datatype: DataType, op: RedOp, blocks: &[&[u8]], ring: &[usize]) -> Vec<u8> {
    match datatype {
        DataType::Int8 => fold::<i8>(op, blocks, ring),
        DataType::Uint8 => fold::<u8>(op, blocks, ring),
        DataType::Int32 => fold::<i32>(op, blocks, ring),
        DataType::Uint32 => fold::<u32>(op, blocks, ring),
        DataType::Int64 => fold::<i64>(op, blocks, ring),
        DataType::Uint64 => fold::<u64>(op, blocks, ring),
        DataType::Float16 => fold::<f16>(op, blocks, ring),
        DataType::Float32 => fold::<f32>(op, blocks, ring),
        DataType::Float64 => fold::<f64>(op, blocks, ring),
        DataType::Bfloat16 => fold::<bf16>(op, blocks, ring),
    }
}

fn fold<T: Element>(op: RedOp, blocks: &[&[u8]], ring: &[usize]) -> Vec<u8> {
    let elements = blocks[0].len() / T::SIZE;
    let mut out = Vec::with_capacity(blocks[0].len());
    let mut terms = Vec::with_capacity(ring.len());
    for i in 0..elements {
        terms.clear();
        terms.extend(
            ring.iter()
                .map(|&r| T::read(&blocks[r][i * T::SIZE..][..T::SIZE])),
        );
        let first = terms[0];
        let rest = terms[1..].iter().copied();
        let value = match op {
            RedOp::Sum => rest.fold(first, T::add),
            RedOp::Prod => rest.fold(first, T::mul),
            RedOp::Max => rest.fold(first, |a, b| if b > a { b } else { a }),
            RedOp::Min => rest.fold(first, |a, b| if b < a { b } else { a }),
            RedOp::Avg => T::average(&terms),
        };
        value.write(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(function: Function, datatype: DataType, op: RedOp, count: usize) -> Shape {
        Shape {
            function,
            datatype,
            op,
            count,
            nranks: 3,
            root: 1,
        }
    }

    fn bytes<T: Element>(values: &[T]) -> Vec<u8> {
        let mut out = Vec::new();
        values.iter().for_each(|v| v.write(&mut out));
        out
    }

    #[test]
    fn each_collective_moves_the_blocks_nccl_documents() {
        let inputs = vec![bytes(&[1i32, 2]), bytes(&[10, 20]), bytes(&[100, 200])];
        let ring = [0, 1, 2];
        let all_reduce = shape(Function::AllReduce, DataType::Int32, RedOp::Sum, 2);
        assert_eq!(
            outputs(&all_reduce, &inputs, &ring),
            vec![bytes(&[111, 222]); 3]
        );
        let gather = shape(Function::AllGather, DataType::Int32, RedOp::Sum, 2);
        let gathered = bytes(&[1, 2, 10, 20, 100, 200]);
        assert_eq!(outputs(&gather, &inputs, &ring), vec![gathered; 3]);
        let broadcast = shape(Function::Broadcast, DataType::Int32, RedOp::Sum, 2);
        assert_eq!(
            outputs(&broadcast, &inputs, &ring),
            vec![bytes(&[10, 20]); 3]
        );
        let scatter = shape(Function::ReduceScatter, DataType::Int32, RedOp::Max, 1);
        let wide = vec![bytes(&[1i32, 9, 3]), bytes(&[4, 5, 6]), bytes(&[7, 8, 2])];
        let parts = outputs(&scatter, &wide, &ring);
        assert_eq!(parts, [bytes(&[7]), bytes(&[9]), bytes(&[6])]);
    }

    #[test]
    fn integers_wrap_and_average_truncates() {
        let ring = [0, 1, 2];
        let sum = reduce(DataType::Uint8, RedOp::Sum, &[&[200], &[100], &[1]], &ring);
        assert_eq!(sum, [45]);
        let avg = reduce(DataType::Int8, RedOp::Avg, &[&[0xff], &[0xff], &[0]], &ring);
        assert_eq!(avg, [0], "-2 / 3 truncates to 0");
    }

    #[test]
    fn half_precision_rounds_at_every_ring_step() {
        // 2048 + 1 rounds back to 2048 in FP16 at each step; exactly it would be 2050.
        let one = bytes(&[f16::from_f32(1.0)]);
        let big = bytes(&[f16::from_f32(2048.0)]);
        let blocks: [&[u8]; 3] = [&big, &one, &one];
        let sum = reduce(DataType::Float16, RedOp::Sum, &blocks, &[0, 1, 2]);
        assert_eq!(sum, bytes(&[f16::from_f32(2048.0)]));
        let other_order = reduce(DataType::Float16, RedOp::Sum, &blocks, &[1, 2, 0]);
        assert_eq!(other_order, bytes(&[f16::from_f32(2050.0)]));
    }
}
