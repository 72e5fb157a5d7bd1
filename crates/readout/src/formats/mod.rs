//! The files Readout reads and writes, as types with their checks: rubrics, eval sets, texts to
//! score, result files and calibration files. Nothing here runs a model: a format can be read,
//! checked and written without the pipeline.

pub mod calibration;
pub mod evalset;
pub mod results;
pub mod rubric;
pub mod texts;
