//! The files Readout reads and writes, as types with their checks: rubrics, eval sets, texts to
//! score, result files, calibration files, judges files (a jury's make-up), jury files and labels files (a person's answers, an eval set). Nothing here runs a model: a format can be read,
//! checked and written without the pipeline.

pub mod calibration;
pub mod evalset;
pub mod judges;
pub mod jury;
pub mod labels;
pub mod pairwise;
pub mod results;
pub mod rubric;
pub mod texts;
