//! `loopcheck task`: a case as a controller meets it.

use crate::scenario::{self, StateMode};

use super::args::TaskArgs;
use super::error::CliError;
use super::list::print_listing;

pub(super) fn task(args: TaskArgs) -> Result<u8, CliError> {
    let cases = scenario::catalogue().map_err(CliError::Scenarios)?;
    let Some(case) = cases.iter().find(|c| c.scenario.id == args.case) else {
        let near = cases
            .iter()
            .map(|c| c.scenario.id.clone())
            .filter(|id| id.contains(args.case.as_str()))
            .collect();
        return Err(CliError::UnknownCase {
            case: args.case,
            near,
        });
    };
    let states = &case.scenario.run_states();
    let state = match args.state {
        Some(state) if states.contains(&state) => state,
        Some(state) => {
            return Err(CliError::NotRunIn {
                case: args.case,
                asked: state.to_string(),
                runs: states.iter().map(|s| s.as_str()).collect(),
            });
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
            return Err(CliError::NotRunIn {
                case: args.case,
                asked: format!("delivery {delivery}"),
                runs: deliveries.iter().map(|d| d.as_str()).collect(),
            });
        }
    };
    let text = if args.json {
        serde_json::to_string_pretty(&crate::scenario::task_json(&scenario, state))
            .unwrap_or_default()
            + "\n"
    } else {
        scenario::preview::preview(&scenario, state)
    };
    print_listing(&text)
}
