//! `loopcheck task`: a case as a controller meets it.

use crate::runner;
use crate::scenario::{self, StateMode};

use super::args::TaskArgs;
use super::error::CliError;
use super::list::print_listing;

pub(super) fn task(args: TaskArgs) -> Result<u8, CliError> {
    let cases = scenario::catalogue().map_err(CliError::Scenarios)?;
    let Some(case) = cases.iter().find(|c| c.scenario.id == args.case) else {
        let near: Vec<&str> = cases
            .iter()
            .map(|c| c.scenario.id.as_str())
            .filter(|id| id.contains(args.case.as_str()))
            .collect();
        let hint = match near.as_slice() {
            [] => "see `loopcheck list`".to_owned(),
            ids => format!("did you mean {}?", ids.join(", ")),
        };
        return Err(CliError::Usage(format!(
            "no case '{}' in the catalogue: {hint}",
            args.case
        )));
    };
    let states = &case.scenario.run_states();
    let state = match args.state {
        Some(state) if states.contains(&state) => state,
        Some(state) => {
            let runs: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
            return Err(CliError::Usage(format!(
                "{} does not run in {state}: it runs in {}",
                args.case,
                runs.join(", ")
            )));
        }
        None => states
            .first()
            .copied()
            .unwrap_or(StateMode::PreviousResponseId),
    };
    let deliveries = case.scenario.run_deliveries();
    let scenario = match args.delivery {
        None => case.scenario.delivered(deliveries[0]),
        Some(delivery) if deliveries.contains(&delivery) => case.scenario.delivered(delivery),
        Some(delivery) => {
            let runs: Vec<&str> = deliveries.iter().map(|d| d.as_str()).collect();
            return Err(CliError::Usage(format!(
                "{} does not run in delivery {delivery}: it runs in {}",
                args.case,
                runs.join(", ")
            )));
        }
    };
    let text = if args.json {
        serde_json::to_string_pretty(&runner::task::task_json(&scenario, state)).unwrap_or_default()
            + "\n"
    } else {
        scenario::preview::preview(&scenario, state)
    };
    print_listing(&text)
}
