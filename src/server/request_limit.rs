//! The request limit: how many model requests a case run may make before loopcheck stops
//! it. A loop without a round limit does not end by itself; stopped at once, it fails on
//! its budget in seconds instead of running into the case timeout.

use crate::scenario::Scenario;

/// How many model requests a case run may make, and what that margin is taken over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimit {
    /// The model requests the case's budget allows: the task's `max_rounds`, or the
    /// scripted turns when a finite script has more (an endless script answers forever,
    /// so only `max_rounds` bounds it).
    pub budget: usize,
    /// The most model requests served before the run is stopped: twice the budget, and
    /// at least 20 more than it, so retries and a controller's own slack never reach it.
    pub limit: usize,
}

/// The extra requests a loop may make over its budget before it is stopped, at least.
const MARGIN: usize = 20;

impl RequestLimit {
    /// The limit of a run of `scenario`.
    pub fn of(scenario: &Scenario) -> Self {
        let rounds = scenario.task.max_rounds as usize;
        let endless = scenario.script.iter().any(|turn| turn.endless);
        let budget = if endless {
            rounds
        } else {
            rounds.max(scenario.script.len())
        };
        Self {
            budget,
            limit: (2 * budget).max(budget + MARGIN),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_script_is_bounded_by_max_rounds_a_finite_one_by_its_turns_too() {
        let endless = crate::scenario::catalogue_scenario("budget/01-endless-tool-calls");
        assert_eq!(
            RequestLimit::of(&endless),
            RequestLimit {
                budget: 4,
                limit: 24
            }
        );
        let finite = crate::scenario::catalogue_scenario("correlation/01-single-call");
        let budget = (finite.task.max_rounds as usize).max(finite.script.len());
        assert_eq!(
            RequestLimit::of(&finite).limit,
            (2 * budget).max(budget + 20)
        );
    }
}
