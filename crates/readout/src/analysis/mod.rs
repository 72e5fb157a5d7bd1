//! Tools over models and result files, beside the jobs: benchmarks that write timing files
//! ([`bench`]), the speed levers' comparison ([`levers`]), fitting a temperature
//! ([`calibrate`]), pooling several judges' runs ([`jury`]), the standings of a pairwise run ([`pairwise`]), completions as OpenAI-style APIs ask for them ([`complete`]), how many labels a person needs ([`labels_curve`]), log-likelihoods of
//! continuations ([`loglik`]) and figures derived from a
//! model's shape ([`derive`]).

pub mod bench;
pub mod calibrate;
pub mod complete;
pub mod derive;
pub mod jury;
pub mod labels_curve;
pub mod levers;
pub mod loglik;
pub mod pairwise;
