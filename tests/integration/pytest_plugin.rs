//! The pytest plugin in `harness/python`: its example suite runs three catalogue cases
//! against an in-process loop through `loopcheck serve`, and a seeded defect fails with
//! the check that catches it. The plugin is loaded from the source tree; the `loopcheck`
//! wheel that installs it is tested by `packaging/ci-check.sh`.

use std::process::{Command, Output};

use crate::support;

/// Runs pytest on `target` (relative to the repository) with the plugin from the source
/// tree; None when pytest or the SDK is not installed here.
fn pytest(target: &str) -> Option<Output> {
    let python = support::python();
    let probe = Command::new(&python)
        .args(["-c", "import openai, jsonschema, pytest"])
        .output();
    match probe {
        Ok(output) if output.status.success() => {}
        Ok(output) => {
            support::missing_sdk(
                "pytest (pip install -r harness/python/requirements.txt)",
                String::from_utf8_lossy(&output.stderr).trim(),
            );
            return None;
        }
        Err(err) => {
            support::missing_sdk("pytest", &err.to_string());
            return None;
        }
    }
    let root = support::root();
    let output = Command::new(&python)
        .args(["-m", "pytest", target, "-q", "-p", "no:cacheprovider"])
        // The plugin as it is in this tree, named: no installed copy (an older
        // `loopcheck` wheel, say) registers itself beside it.
        .args(["-p", "loopcheck_pytest.plugin"])
        .env("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        .env("PYTHONPATH", root.join("harness/python"))
        .current_dir(&root)
        .env("LOOPCHECK_BIN", support::loopcheck_bin())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("pytest starts");
    Some(output)
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn the_example_suite_passes_three_cases_through_the_plugin() {
    let Some(output) = pytest("harness/python/examples") else {
        return;
    };
    let text = text(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("3 passed"), "{text}");
}

#[test]
fn a_seeded_defect_fails_with_the_check_that_catches_it() {
    let Some(output) = pytest("harness/python/examples/seeded_defect.py") else {
        return;
    };
    let text = text(&output);
    assert!(!output.status.success(), "the defect passed:\n{text}");
    assert!(text.contains("1 failed"), "{text}");
    assert!(
        text.contains(
            "fail call-id/own-id (must): request 2: function_call_output carries call_id 'fc_"
        ),
        "{text}"
    );
}
