//! How big a scenario is, as shrinking reports it: what a reader of a shrunk failure has
//! to look through.

use std::fmt;

use crate::scenario::{OutputSpec, Scenario};

/// The parts of a scenario that shrinking removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Size {
    /// Model turns.
    pub turns: usize,
    /// Tool calls the model makes (function and custom).
    pub calls: usize,
    /// Tools in the task.
    pub tools: usize,
    /// Tools given a scripted behaviour.
    pub fixtures: usize,
    /// Policies: deny, approval, unavailability, rate-limit and slowness rules, and the
    /// task's approval requirements.
    pub policies: usize,
}

impl Size {
    /// The size of `scenario`.
    pub fn of(scenario: &Scenario) -> Self {
        let calls = scenario
            .script
            .iter()
            .flat_map(|turn| &turn.output)
            .filter(|output| matches!(output, OutputSpec::Call(_) | OutputSpec::CustomCall(_)))
            .count();
        let rules: usize = scenario
            .tools
            .values()
            .map(|b| {
                b.deny.len()
                    + b.approvals.len()
                    + b.unavailable.len()
                    + b.rate_limited.len()
                    + b.slow.len()
            })
            .sum();
        Self {
            turns: scenario.script.len(),
            calls,
            tools: scenario.task.tools.len(),
            fixtures: scenario.tools.len(),
            policies: rules + scenario.task.approval_required.len(),
        }
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} turn(s), {} call(s), {} tool(s), {} fixture(s), {} polic{}",
            self.turns,
            self.calls,
            self.tools,
            self.fixtures,
            self.policies,
            if self.policies == 1 { "y" } else { "ies" }
        )
    }
}
