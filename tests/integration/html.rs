//! `--html`: the report page, opened in a real headless Chromium (`chromium`,
//! `chromium-browser` or `google-chrome`; `.ci/run` installs Debian's). Without a browser
//! the browser tests are skipped with a note, except under CI, where they fail.
//!
//! The page records its own script errors (`data-js-errors`) and marks `<body
//! data-js-ok="1">` when its script has run, so `--dump-dom`, which prints the DOM after
//! the scripts ran, shows both; the browser's console log on stderr is scanned too.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::cli::{self, assert_success, loopcheck};
use crate::support::controllers::{except_on, interpreted};
use crate::support::{loopcheck_bin, missing_sdk, python};

/// The failing case of the run; the others pass.
const FAILING: &str = "correlation/01-single-call";

/// A controller that asks the model once, then chains a second request without the
/// function_call_output the first response asked for (the fake server rejects it), and
/// reports an answer it made up. Its texts carry markup: an unescaped page would run the
/// script and mark `<body data-injected>`.
const SKIPPER: &str = r#"
import json, os, urllib.request, urllib.error
task = json.load(open(os.environ["LOOPCHECK_TASK"]))
base = os.environ["OPENAI_BASE_URL"].rstrip("/")
def create(body):
    request = urllib.request.Request(base + "/responses", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "")})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as err:
        return json.load(err)
first = create({"input": task["input"], "model": task["model"], "instructions": task.get("instructions"), "tools": task["tools"]})
create({"input": "go on </svg><script>document.body.setAttribute('data-injected', 1)</script>",
        "previous_response_id": first.get("id"), "model": task["model"], "tools": task["tools"]})
print(json.dumps({"status": "completed",
                  "output_text": "made up </summary><img src=x onerror=\"document.body.setAttribute('data-injected', 2)\">"}))
"#;

/// The first browser found on PATH; None (after the note, or the CI failure) without one.
fn browser() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    missing_sdk(
        "headless browser (Debian package chromium)",
        "no chromium, chromium-browser or google-chrome on PATH",
    );
    None
}

/// Runs headless Chromium on `url` with `args`; `(stdout, stderr)`. Killed after a
/// minute: a browser that hangs must fail the test, not the CI job.
fn chromium(browser: &Path, args: &[&str], url: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = Command::new(browser)
        .args([
            "--headless",
            // CI runs as root, where the sandbox cannot start.
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("{} did not finish within a minute", browser.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (
        std::fs::read_to_string(out).unwrap(),
        std::fs::read_to_string(err).unwrap(),
    )
}

/// The DOM after the page's scripts ran, checked for script errors on the page and in
/// the browser's console log.
fn dom(browser: &Path, url: &str) -> String {
    let (dom, log) = chromium(browser, &["--dump-dom"], url);
    assert!(dom.contains("<body"), "no DOM dumped: {log}");
    let console: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    // The attributes, not the text of the script that sets them.
    assert!(
        !dom.contains(r#"data-js-errors=""#),
        "script errors on the page: {dom}"
    );
    assert!(
        dom.contains(r#"<body data-js-ok="1">"#),
        "the page's script did not run to its end: {}",
        &dom[..dom.len().min(2000)]
    );
    assert!(
        !dom.contains(r#"data-injected=""#),
        "text from the run ran as markup"
    );
    dom
}

/// The `<details>` element of one case run in a DOM dump: up to the next case run.
fn section<'a>(dom: &'a str, id: &str, state: &str) -> &'a str {
    let anchor: String = format!("case-{id}-{state}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let start = dom
        .find(&format!(r#"<details class="case" id="{anchor}""#))
        .unwrap_or_else(|| panic!("no section {anchor}"));
    let end = [r#"<details class="case""#, "</main>"]
        .iter()
        .filter_map(|end| dom[start + 1..].find(end))
        .min()
        .map_or(dom.len(), |n| start + 1 + n);
    &dom[start..end]
}

/// Whether a section's or a row's opening tag hides it.
fn hidden(element: &str) -> bool {
    element[..element.find('>').unwrap()].contains(r#" hidden="""#)
}

/// A controller that runs `failing` on the failing case and is the reference elsewhere.
fn router(failing: &str) -> String {
    except_on(FAILING, failing)
}

/// Runs the three cases (one failing) with `--html`; the page's path, in `dir`.
fn report(dir: &Path) -> PathBuf {
    let script = dir.join("skipper.py");
    std::fs::write(&script, SKIPPER).unwrap();
    let controller = router(&interpreted(&python(), &script));
    let page = dir.join("report.html");
    let output = loopcheck(&[
        "run",
        "--controller",
        &controller,
        "--supports",
        "previous_response_id",
        "--filter",
        "correlation/0[12]*",
        "--filter",
        "terminal/09*",
        "--html",
        &page.to_string_lossy(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("FAIL        {FAILING} [previous_response_id]")),
        "{stdout}"
    );
    assert!(
        stdout.contains("PASS        terminal/09-refusal [previous_response_id]"),
        "{stdout}"
    );
    page
}

#[test]
fn the_page_runs_in_a_browser_and_shows_the_failing_step() {
    let Some(browser) = browser() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = report(dir.path());
    let url = format!("file://{}", page.display());
    let dom = dom(&browser, &url);
    assert!(
        dom.contains(r#"<span id="shown">6 of 6 shown</span>"#),
        "{dom}"
    );
    let failing = section(&dom, FAILING, "previous_response_id");
    assert!(failing.contains(r#"data-verdicts="fail""#) && failing.contains("open"));
    assert!(failing.contains(r#"<svg class="seq""#), "{failing}");
    // Request 2 was rejected and named by the failing checks: marked both ways.
    let request_2 = failing
        .split("<g ")
        .find(|g| g.contains("POST /v1/responses · request 2"))
        .unwrap_or_else(|| panic!("no request 2 in {failing}"));
    assert!(
        request_2.starts_with(r#"class="step rejected named""#),
        "{request_2}"
    );
    assert!(request_2.contains("400 rejected (E2)"), "{request_2}");
    assert!(request_2.contains("named by wire/accepted: request 2 was rejected"));
    assert!(failing.contains("result: completed · "), "{failing}");
    assert!(
        failing.contains("<code>terminal/outcome</code>"),
        "{failing}"
    );
    // The passing runs are there, closed, with their own diagrams; unsupported ones too.
    let passing = section(&dom, "terminal/09-refusal", "previous_response_id");
    assert!(passing.contains(r#"data-verdicts="pass""#) && !passing.contains(" open"));
    // No step's class ends in `named`.
    assert!(passing.contains(r#"<svg class="seq""#) && !passing.contains(r#"named""#));
    assert!(section(&dom, FAILING, "stateless").contains(r#"data-verdicts="unsupported""#));

    // The filters work from the URL's fragment: only the failing run stays shown.
    let filtered = self::dom(&browser, &format!("{url}#verdict=fail"));
    assert!(filtered.contains("1 of 6 shown"), "{filtered}");
    assert!(!hidden(section(&filtered, FAILING, "previous_response_id")));
    let passing = section(&filtered, "terminal/09-refusal", "previous_response_id");
    assert!(hidden(passing), "{passing}");
    let by_check = self::dom(&browser, &format!("{url}#check=dispatch/valid-executed"));
    assert!(by_check.contains("1 of 6 shown"), "{by_check}");

    // The screenshot, kept as a CI artifact next to the build.
    let artifacts = loopcheck_bin()
        .parent()
        .and_then(Path::parent)
        .expect("the binary is in <target>/<profile>/")
        .join("loopcheck-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let png = artifacts.join("html-report.png");
    let _ = std::fs::remove_file(&png);
    let (_, log) = chromium(
        &browser,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1280,2000",
        ],
        &url,
    );
    let bytes = std::fs::read(&png).unwrap_or_else(|err| panic!("no screenshot ({err}): {log}"));
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let size = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    assert_eq!((size(16), size(20)), (1280, 2000), "the screenshot's size");
    eprintln!("screenshot of the HTML report: {}", png.display());
}

#[test]
fn the_matrix_page_runs_in_a_browser_and_filters_disagreements() {
    let Some(browser) = browser() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("matrix.html");
    // The liar fails one case and agrees with the reference on the other.
    let liar = router(r#"echo '{"status": "completed", "output_text": "made up"}'"#);
    let output = loopcheck(&[
        "matrix",
        "--controller",
        "reference",
        "--controller",
        &format!("liar={liar}"),
        // The JSON runs only: the liar does not stream.
        "--supports",
        "reference=previous_response_id,stateless",
        "--filter",
        "correlation/01*",
        "--filter",
        "terminal/09*",
        "--html",
        &page.to_string_lossy(),
    ]);
    assert_success(&output);
    let url = format!("file://{}", page.display());
    let dom = dom(&browser, &url);
    assert!(dom.contains("<th>reference</th><th>liar</th>"), "{dom}");
    assert!(dom.contains("4 of 4 shown"), "{dom}");
    assert!(
        dom.contains(r#"<td class="v-fail" title="terminal/outcome">fail</td>"#),
        "{dom}"
    );
    let row = |dom: &str, label: &str| -> bool {
        // Whether the row is hidden.
        let at = dom.find(&format!("<th>{label}</th>")).unwrap();
        hidden(&dom[dom[..at].rfind("<tr").unwrap()..])
    };
    let disagree = self::dom(&browser, &format!("{url}#disagree=1"));
    assert!(disagree.contains("2 of 4 shown"), "{disagree}");
    assert!(!row(&disagree, &format!("{FAILING} [stateless]")));
    assert!(row(&disagree, "terminal/09-refusal [stateless]"));
    let area = self::dom(&browser, &format!("{url}#area=terminal"));
    assert!(area.contains("2 of 4 shown"), "{area}");
    assert!(row(&area, &format!("{FAILING} [previous_response_id]")));
}

#[test]
fn merged_shards_make_a_page_without_diagrams() {
    let dir = tempfile::tempdir().unwrap();
    let mut shards = Vec::new();
    for k in 1..=2 {
        let shard = dir.path().join(format!("shard{k}.json"));
        assert_success(&loopcheck(&[
            "run",
            "--filter",
            "correlation/0[12]*",
            "--partition",
            &format!("slice:{k}/2"),
            "--report-json",
            &shard.to_string_lossy(),
        ]));
        shards.push(shard);
    }
    let page = dir.path().join("merged.html");
    let merged = cli::command(&["merge"])
        .args(&shards)
        .arg("--html")
        .arg(&page)
        .output()
        .expect("loopcheck runs");
    assert_success(&merged);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Merged from 2 shard report(s)"), "{html}");
    // Two cases, in two state modes, each with JSON and streamed responses.
    assert_eq!(
        html.matches(r#"<details class="case""#).count(),
        8,
        "{html}"
    );
    assert!(html.contains("No diagram: merged JSON reports hold no transcripts."));
    assert!(!html.contains("<svg"));
}
