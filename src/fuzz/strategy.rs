//! proptest strategies for plans, limited to what the controller declares it supports:
//! a state mode it declares, streams only with `stream`, refunds only with `approvals`,
//! programs only with `programmatic`, custom tool calls only with `custom`. Every choice is
//! ordered simplest first, so proptest shrinks a failing plan towards fewer rounds, fewer
//! calls, plain valid calls and no faults.
//!
//! The output beside the calls (citations, reasoning text, the content filter's ending,
//! custom calls) is drawn after everything else, from the end of each case's random
//! stream: a seed's cases keep the rounds, calls and endings they had before those
//! existed.

use std::collections::BTreeSet;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;

use super::plan::{CallKind, Chunking, CustomCall, End, Plan, Round, Transient};
use crate::scenario::StateMode;

/// What the generator may use.
#[derive(Debug, Clone)]
pub struct Profile {
    /// The controller's declared capabilities.
    pub supports: BTreeSet<String>,
    /// Most turns in a case (rounds plus the last turn), at least 1.
    pub max_turns: usize,
}

impl Profile {
    fn has(&self, word: &str) -> bool {
        self.supports.contains(word)
    }

    /// The state modes the controller declares, in the order proptest shrinks to.
    fn states(&self) -> Vec<StateMode> {
        [
            StateMode::PreviousResponseId,
            StateMode::Stateless,
            StateMode::Conversation,
        ]
        .into_iter()
        .filter(|s| self.has(s.as_str()))
        .collect()
    }
}

fn call_kind(approvals: bool) -> BoxedStrategy<CallKind> {
    let mut kinds = vec![
        (6, (0u8..8).prop_map(CallKind::Stock).boxed()),
        (3, (0u8..5).prop_map(CallKind::Weather).boxed()),
        (1, Just(CallKind::Unknown).boxed()),
        (1, Just(CallKind::Malformed).boxed()),
        (1, Just(CallKind::SchemaViolation).boxed()),
        (1, Just(CallKind::Denied).boxed()),
        (1, Just(CallKind::Transient).boxed()),
    ];
    if approvals {
        kinds.push((1, Just(CallKind::RefundApproved).boxed()));
        kinds.push((1, Just(CallKind::RefundDenied).boxed()));
    }
    proptest::strategy::Union::new_weighted(kinds).boxed()
}

fn transient() -> impl Strategy<Value = Transient> {
    // A dropped connection carries no retry-after: the SDKs back off 0.5 s, so it is rarer.
    prop_oneof![
        3 => Just(Transient::RateLimited),
        3 => Just(Transient::ServerError),
        3 => Just(Transient::Unavailable),
        1 => Just(Transient::Dropped),
    ]
}

fn round(approvals: bool, programmatic: bool) -> impl Strategy<Value = Round> {
    (
        any::<bool>(),
        prop::bool::weighted(0.2),
        vec(call_kind(approvals), 1..=4),
        if programmatic {
            prop::bool::weighted(0.25).boxed()
        } else {
            Just(false).boxed()
        },
        // At most two faults: the SDKs retry twice.
        vec(transient(), 0..=2),
        prop::bool::weighted(0.25),
        // Taken only in a case over the socket.
        prop::bool::weighted(0.25),
    )
        .prop_map(
            |(reasoning, preamble, calls, program, faults, faulty, close_connection)| Round {
                reasoning,
                preamble,
                calls,
                program,
                faults: if faulty { faults } else { Vec::new() },
                close_connection,
                reasoning_text: false,
                cited: false,
                custom: None,
            },
        )
}

/// What a round has beside its calls and faults: (reasoning text, a cited preamble, a
/// custom call).
type RoundOutput = (bool, bool, Option<CustomCall>);

fn round_output(custom: bool) -> impl Strategy<Value = RoundOutput> {
    (
        prop::bool::weighted(0.25),
        prop::bool::weighted(0.25),
        if custom {
            prop::option::weighted(
                0.3,
                prop_oneof![
                    3 => (0u8..8).prop_map(CustomCall::Valid),
                    1 => Just(CustomCall::BrokenGrammar),
                ],
            )
            .boxed()
        } else {
            Just(None).boxed()
        },
    )
}

/// How the last turn ends; the stream-only endings become answers in a case that does
/// not stream (so the strategy needs no `flat_map`, which proptest shrinks badly).
fn end() -> BoxedStrategy<End> {
    let ends = vec![
        (8, any::<bool>().prop_map(End::Answer).boxed()),
        (1, Just(End::Refusal).boxed()),
        (1, Just(End::IncompleteText).boxed()),
        (1, Just(End::IncompleteCall).boxed()),
        (1, Just(End::IncompleteReasoning).boxed()),
        (1, Just(End::Failed).boxed()),
        (1, Just(End::ClientError).boxed()),
        (1, Just(End::NoRetry).boxed()),
        (1, Just(End::Cut).boxed()),
        (1, Just(End::ErrorEvent).boxed()),
    ];
    proptest::strategy::Union::new_weighted(ends).boxed()
}

/// Whether the last turn has a final message (the answer, or the one a fault or a cut
/// stream keeps from the controller).
fn has_answer(end: End) -> bool {
    matches!(
        end,
        End::Answer(_) | End::Cut | End::ErrorEvent | End::ClientError | End::NoRetry
    )
}

fn chunking() -> impl Strategy<Value = Chunking> {
    prop_oneof![
        4 => Just(Chunking::Plain),
        1 => Just(Chunking::TinyDeltas),
        1 => Just(Chunking::ByteWrites),
    ]
}

/// Plans for a controller with this profile.
pub fn plans(profile: &Profile) -> BoxedStrategy<Plan> {
    let states = profile.states();
    let states = if states.is_empty() {
        vec![StateMode::PreviousResponseId]
    } else {
        states
    };
    let stream = profile.has("stream");
    let websocket = profile.has("websocket");
    let approvals = profile.has("approvals");
    let programmatic = profile.has("programmatic");
    let custom = profile.has("custom");
    let rounds = profile.max_turns.max(1) - 1;
    (
        proptest::sample::select(states),
        if stream {
            prop::option::weighted(0.35, chunking()).boxed()
        } else {
            Just(None).boxed()
        },
        vec(round(approvals, programmatic), 0..=rounds),
        end(),
        prop::option::weighted(0.15, 1usize..=rounds.max(1)),
        if websocket {
            prop::bool::weighted(0.3).boxed()
        } else {
            Just(false).boxed()
        },
        // Last, so that what comes before is drawn as it was without them.
        vec(round_output(custom), rounds..=rounds),
        (
            prop::bool::weighted(0.25),
            prop::bool::weighted(0.25),
            prop::bool::weighted(0.5),
        ),
    )
        .prop_map(
            move |(state, stream, rounds, end, budget, websocket, outputs, last)| Plan {
                state,
                // The socket carries events: a case over it is a streamed one.
                stream: if websocket {
                    stream.or(Some(Chunking::Plain))
                } else {
                    stream
                },
                websocket,
                approvals,
                programmatic,
                rounds: rounds
                    .into_iter()
                    .zip(outputs)
                    .map(|(round, (reasoning_text, cited, custom))| Round {
                        // Only what the round has: a plan shrinks to one it would print.
                        reasoning_text: reasoning_text && round.reasoning,
                        cited: cited && round.preamble,
                        custom: custom.filter(|_| !(round.program && programmatic)),
                        ..round
                    })
                    .collect(),
                end: match end {
                    End::Cut | End::ErrorEvent if stream.is_none() && !websocket => {
                        End::Answer(false)
                    }
                    end => end,
                },
                budget,
                cited: last.0 && has_answer(end),
                reasoning_text: last.1 && end == End::Answer(true),
                filtered: last.2 && end == End::IncompleteText,
            },
        )
        .boxed()
}
