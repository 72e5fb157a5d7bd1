//! The jobs the shells run, each sequencing the pipeline's stages under one configuration:
//! [`run`] evaluates a model on an eval set (checkpoints, resuming, shards in [`shard`]),
//! [`score`] decides texts against a rubric, [`jury`] does either with several judges; [`request`] is the one score request every shell
//! builds and validates, [`answers`] the one CSV table of scored answers, [`scored`] the file a
//! scoring is kept in; [`review`] draws texts
//! for a person to label and turns the labels into agreement and corrected rates.

pub mod answers;
pub mod decide;
pub mod jury;
pub mod request;
pub mod review;
pub mod run;
pub mod score;
pub mod scored;
pub mod shard;
pub mod systemone;
