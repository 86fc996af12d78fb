//! The store's rows as Parquet and back, through the `parquet` and `arrow` crates: one row group
//! per file, Snappy-compressed, strings dictionary-encoded (a run's environment repeats on each
//! of its rows), the samples delta-encoded (neighbouring samples differ by little).

use super::rows::Row;
use super::{Columns, StoreError};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, TimestampMicrosecondType, UInt32Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, ListArray, RecordBatch, StringArray,
    TimestampMicrosecondArray, UInt32Array,
};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::{Compression, Encoding};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// The samples' list element, named as the Parquet format's list type names it.
const ELEMENT: &str = "element";

/// The table's schema: the columns of [`Row`], in its order (doc/schemas.md documents each).
pub fn schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let text = |name: &str, nullable| Field::new(name, DataType::Utf8, nullable);
            Arc::new(Schema::new(vec![
                text("run_id", false),
                text("command", false),
                text("started", false),
                Field::new(
                    "started_at",
                    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                    false,
                ),
                text("host", false),
                text("boot_id", true),
                text("stackbench", false),
                Field::new("gpu", DataType::UInt32, true),
                text("gpu_uuid", true),
                text("pci_bus_id", true),
                text("model", true),
                text("driver", true),
                text("cuda", true),
                text("combination", false),
                text("libraries", false),
                text("clocks", false),
                Field::new("simulated", DataType::Boolean, false),
                text("row_id", false),
                text("kind", false),
                Field::new("figure", DataType::Float64, true),
                text("unit", true),
                text("status", false),
                Field::new("verified", DataType::Boolean, true),
                Field::new("q1", DataType::Float64, true),
                Field::new("q3", DataType::Float64, true),
                Field::new(
                    "samples",
                    DataType::List(Arc::new(Field::new(ELEMENT, DataType::Int64, false))),
                    false,
                ),
            ]))
        })
        .clone()
}

/// `rows` as one Parquet file.
pub fn encode(rows: &[&Row]) -> std::io::Result<Vec<u8>> {
    let other = |e: &dyn std::fmt::Display| std::io::Error::other(e.to_string());
    let batch = batch(rows).map_err(|e| other(&e))?;
    let samples = ColumnPath::new(vec!["samples".into(), "list".into(), ELEMENT.into()]);
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_column_dictionary_enabled(samples.clone(), false)
        .set_column_encoding(samples, Encoding::DELTA_BINARY_PACKED)
        .set_max_row_group_row_count(Some(rows.len().max(1)))
        .build();
    let mut bytes = Vec::new();
    let mut writer =
        ArrowWriter::try_new(&mut bytes, schema(), Some(properties)).map_err(|e| other(&e))?;
    writer.write(&batch).map_err(|e| other(&e))?;
    writer.close().map_err(|e| other(&e))?;
    Ok(bytes)
}

/// `rows` as one Arrow record batch of [`schema`].
fn batch(rows: &[&Row]) -> Result<RecordBatch, arrow_schema::ArrowError> {
    fn text<'a>(rows: &'a [&Row], f: impl Fn(&'a Row) -> Option<&'a str>) -> ArrayRef {
        Arc::new(rows.iter().map(|r| f(r)).collect::<StringArray>())
    }
    fn number(rows: &[&Row], f: impl Fn(&Row) -> Option<f64>) -> ArrayRef {
        Arc::new(rows.iter().map(|r| f(r)).collect::<Float64Array>())
    }
    let started: TimestampMicrosecondArray = rows.iter().map(|r| Some(r.started_us)).collect();
    let samples = ListArray::try_new(
        Arc::new(Field::new(ELEMENT, DataType::Int64, false)),
        OffsetBuffer::from_lengths(rows.iter().map(|r| r.samples.len())),
        Arc::new(Int64Array::from_iter_values(
            rows.iter().flat_map(|r| r.samples.iter().copied()),
        )),
        None,
    )?;
    let columns: Vec<ArrayRef> = vec![
        text(rows, |r| Some(&r.run_id)),
        text(rows, |r| Some(&r.command)),
        text(rows, |r| Some(&r.started)),
        Arc::new(started.with_timezone("UTC")),
        text(rows, |r| Some(&r.host)),
        text(rows, |r| r.boot_id.as_deref()),
        text(rows, |r| Some(&r.stackbench)),
        Arc::new(rows.iter().map(|r| r.gpu).collect::<UInt32Array>()),
        text(rows, |r| r.gpu_uuid.as_deref()),
        text(rows, |r| r.pci_bus_id.as_deref()),
        text(rows, |r| r.model.as_deref()),
        text(rows, |r| r.driver.as_deref()),
        text(rows, |r| r.cuda.as_deref()),
        text(rows, |r| Some(&r.combination)),
        text(rows, |r| Some(&r.libraries)),
        text(rows, |r| Some(&r.clocks)),
        Arc::new(
            rows.iter()
                .map(|r| Some(r.simulated))
                .collect::<BooleanArray>(),
        ),
        text(rows, |r| Some(&r.row_id)),
        text(rows, |r| Some(&r.kind)),
        number(rows, |r| r.figure),
        text(rows, |r| r.unit.as_deref()),
        text(rows, |r| Some(&r.status)),
        Arc::new(rows.iter().map(|r| r.verified).collect::<BooleanArray>()),
        number(rows, |r| r.q1),
        number(rows, |r| r.q3),
        Arc::new(samples),
    ];
    RecordBatch::try_new(schema(), columns)
}

/// A reader of the store file `path` with the columns named `wanted` (all when `None`).
fn reader(
    path: &Path,
    wanted: Option<&[&str]>,
) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader, StoreError> {
    let invalid = |why: String| StoreError::File {
        path: path.to_path_buf(),
        why,
    };
    let (file, _) = crate::hostfs::open(path).map_err(|e| invalid(e.to_string()))?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| invalid(e.to_string()))?;
    let builder = match wanted {
        Some(names) => {
            let indices: Vec<usize> = (builder.schema().fields().iter().enumerate())
                .filter(|(_, f)| names.contains(&f.name().as_str()))
                .map(|(i, _)| i)
                .collect();
            let mask = ProjectionMask::roots(builder.parquet_schema(), indices);
            builder.with_projection(mask)
        }
        None => builder,
    };
    builder
        .with_batch_size(64 * 1024)
        .build()
        .map_err(|e| invalid(e.to_string()))
}

/// The run ids in the store file `path`.
pub fn run_ids(path: &Path) -> Result<HashSet<String>, StoreError> {
    let mut ids = HashSet::new();
    for batch in reader(path, Some(&["run_id"]))? {
        let batch = batch.map_err(|e| StoreError::File {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
        let taken = Taken {
            batch: &batch,
            path,
        };
        ids.extend(taken.text("run_id")?.iter().flatten().map(str::to_owned));
    }
    Ok(ids)
}

/// The rows of the store file `path`, with `columns` (the others left empty).
pub fn read(path: &Path, columns: Columns) -> Result<Vec<Row>, StoreError> {
    let schema = schema();
    let names: Vec<&str> = schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .filter(|n| columns == Columns::All || *n != "samples")
        .collect();
    let mut rows = Vec::new();
    for batch in reader(path, Some(&names))? {
        let batch = batch.map_err(|e| StoreError::File {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
        rows.extend(rows_of(&Taken {
            batch: &batch,
            path,
        })?);
    }
    Ok(rows)
}

/// A record batch's columns by name, each checked for its type as it is taken.
struct Taken<'a> {
    batch: &'a RecordBatch,
    path: &'a Path,
}

impl<'a> Taken<'a> {
    fn column(&self, name: &str) -> Result<&'a ArrayRef, StoreError> {
        self.batch
            .column_by_name(name)
            .ok_or_else(|| self.invalid(format!("no column {name}")))
    }

    fn invalid(&self, why: String) -> StoreError {
        StoreError::File {
            path: self.path.to_path_buf(),
            why,
        }
    }

    fn typed<T>(&self, name: &str, taken: Option<T>) -> Result<T, StoreError> {
        taken.ok_or_else(|| self.invalid(format!("column {name} has another type")))
    }

    fn text(&self, name: &str) -> Result<&'a StringArray, StoreError> {
        let column = self.column(name)?;
        self.typed(name, column.as_string_opt::<i32>())
    }

    fn number(&self, name: &str) -> Result<&'a Float64Array, StoreError> {
        let column = self.column(name)?;
        self.typed(name, column.as_primitive_opt::<Float64Type>())
    }

    fn flag(&self, name: &str) -> Result<&'a BooleanArray, StoreError> {
        let column = self.column(name)?;
        self.typed(name, column.as_boolean_opt())
    }
}

/// The rows of one batch; a column the batch lacks (not read) leaves its field empty.
fn rows_of(taken: &Taken<'_>) -> Result<Vec<Row>, StoreError> {
    let has = |name: &str| taken.batch.column_by_name(name).is_some();
    let text = |name: &str| taken.text(name);
    let optional =
        |array: &StringArray, i: usize| (!array.is_null(i)).then(|| array.value(i).to_owned());
    let (run_id, command, started, host) = (
        text("run_id")?,
        text("command")?,
        text("started")?,
        text("host")?,
    );
    let started_at = taken.column("started_at")?;
    let started_at = taken.typed(
        "started_at",
        started_at.as_primitive_opt::<TimestampMicrosecondType>(),
    )?;
    let gpu = taken.column("gpu")?;
    let gpu = taken.typed("gpu", gpu.as_primitive_opt::<UInt32Type>())?;
    let (boot_id, stackbench, gpu_uuid, pci_bus_id, model, driver, cuda) = (
        text("boot_id")?,
        text("stackbench")?,
        text("gpu_uuid")?,
        text("pci_bus_id")?,
        text("model")?,
        text("driver")?,
        text("cuda")?,
    );
    let (combination, libraries, clocks, row_id, kind, unit, status) = (
        text("combination")?,
        text("libraries")?,
        text("clocks")?,
        text("row_id")?,
        text("kind")?,
        text("unit")?,
        text("status")?,
    );
    let (simulated, verified) = (taken.flag("simulated")?, taken.flag("verified")?);
    let (figure, q1, q3) = (
        taken.number("figure")?,
        taken.number("q1")?,
        taken.number("q3")?,
    );
    let samples = if has("samples") {
        let column = taken.column("samples")?;
        let list = taken.typed("samples", column.as_list_opt::<i32>())?;
        let values = list.values();
        let values = taken.typed("samples", values.as_primitive_opt::<Int64Type>())?;
        Some((list, values))
    } else {
        None
    };
    let value = |array: &Float64Array, i: usize| (!array.is_null(i)).then(|| array.value(i));
    let needed = |array: &StringArray, i: usize| {
        optional(array, i).ok_or_else(|| taken.invalid("a required column is null".into()))
    };
    (0..taken.batch.num_rows())
        .map(|i| {
            Ok(Row {
                run_id: needed(run_id, i)?,
                command: needed(command, i)?,
                started: needed(started, i)?,
                started_us: started_at.value(i),
                host: needed(host, i)?,
                boot_id: optional(boot_id, i),
                stackbench: needed(stackbench, i)?,
                gpu: (!gpu.is_null(i)).then(|| gpu.value(i)),
                gpu_uuid: optional(gpu_uuid, i),
                pci_bus_id: optional(pci_bus_id, i),
                model: optional(model, i),
                driver: optional(driver, i),
                cuda: optional(cuda, i),
                combination: needed(combination, i)?,
                libraries: needed(libraries, i)?,
                clocks: needed(clocks, i)?,
                simulated: simulated.value(i),
                row_id: needed(row_id, i)?,
                kind: needed(kind, i)?,
                figure: value(figure, i),
                unit: optional(unit, i),
                status: needed(status, i)?,
                verified: (!verified.is_null(i)).then(|| verified.value(i)),
                q1: value(q1, i),
                q3: value(q3, i),
                samples: samples.map_or_else(Vec::new, |(list, values)| {
                    let offsets = list.value_offsets();
                    let (start, end) = (offsets[i] as usize, offsets[i + 1] as usize);
                    values.values()[start..end].to_vec()
                }),
            })
        })
        .collect()
}
