//! Scenarios: the file model, the loader with `file:line:col` errors, and the embedded
//! catalogue.

mod catalogue;
pub(crate) mod fixtures;
mod load;
mod model;
pub(crate) mod preview;
pub mod schema;
mod task;

pub use crate::contract::{Delivery, StateMode, run_label};
#[cfg(test)]
pub use catalogue::catalogue_scenario;
pub use catalogue::{Case, area_counts, catalogue, load_paths, scenario_files};
pub use load::{
    HOSTED_TOOLS, ScenarioError, deserialize, final_message_text, load_file, parse, read_text,
    tool_names,
};
pub use model::*;
pub use task::task_json;
