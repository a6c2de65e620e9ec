//! A run is reproducible: the same case, state mode and seed give the same bytes from the
//! fake server and the same normalized transcript, run after run.

use loopcheck::report::CaseReport;
use loopcheck::runner::{self, Controller, RunOptions};
use loopcheck::transcript::normalize::normalize;

use crate::support::{catalogue, loopcheck_bin};

fn reference() -> Controller {
    Controller::reference("reference", loopcheck_bin())
}

async fn run(seed: u64, only: Option<&str>) -> Vec<CaseReport> {
    let options = RunOptions {
        jobs: 2,
        seed,
        ..RunOptions::default()
    };
    let cases: Vec<_> = catalogue()
        .into_iter()
        .filter(|c| only.is_none_or(|id| c.scenario.id == id))
        .collect();
    runner::run_all(&cases, &reference(), &options, &mut |_| {}).await
}

/// What the fake server sent in a case run: every answer body, in order.
fn served(report: &CaseReport) -> Vec<String> {
    report
        .transcript
        .model
        .iter()
        .map(|m| m.response.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_catalogue_twice_gives_identical_transcripts_case_by_case() {
    let (first, second) = (run(0, None).await, run(0, None).await);
    assert_eq!(first.len(), second.len());
    let mut differences = Vec::new();
    for (a, b) in first.iter().zip(&second) {
        assert_eq!((&a.id, a.state), (&b.id, b.state));
        let (na, nb) = (
            normalize(&a.id, a.state, &a.transcript),
            normalize(&b.id, b.state, &b.transcript),
        );
        if na != nb {
            differences.push(format!(
                "{} [{}]: the normalized transcripts differ:\n{}",
                a.id,
                a.state,
                loopcheck::report::console::diff(
                    &serde_json::to_string_pretty(&na).unwrap(),
                    &serde_json::to_string_pretty(&nb).unwrap()
                )
            ));
        } else if served(a) != served(b) {
            differences.push(format!(
                "{} [{}]: the fake server sent other bytes for the same requests",
                a.id, a.state
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn another_seed_gives_other_ids_and_the_same_normalized_transcript() {
    let case = Some("correlation/05-parallel-same-tool");
    let (a, b) = (&run(1, case).await[0], &run(2, case).await[0]);
    assert_ne!(
        served(a),
        served(b),
        "the seed must change what is generated"
    );
    assert_eq!(
        normalize(&a.id, a.state, &a.transcript),
        normalize(&b.id, b.state, &b.transcript)
    );
}
