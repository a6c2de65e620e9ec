//! `--html FILE`: one self-contained page for a person debugging a run: the summary,
//! filters, and per case run its checks, drift, controller output and a sequence diagram
//! of the exchange. Inline CSS and JS only (it opens offline, from a CI artifact), and
//! readable without JS: every case is in the page, failures open. Written atomically
//! when the run finishes.

pub(crate) mod sequence;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use similar::{ChangeTag, TextDiff};

use super::drift_groups::{case_runs, changes_once, drift_groups};
use super::{CaseReport, Reporter, RunEvent, Summary};
use crate::oracle::{CaseVerdict, CheckResult, CheckVerdict};
use crate::transcript::drift::{Comparison, ComparisonStatus};

/// Most bytes of the controller's stderr shown for a crashed or timed-out case (the
/// tail, where a traceback ends).
const STDERR_TAIL: usize = 8 * 1024;
/// Most lines of that tail.
const STDERR_LINES: usize = 60;

/// Every verdict, in the order the summary lists them.
const VERDICTS: [CaseVerdict; 10] = [
    CaseVerdict::Fail,
    CaseVerdict::Crashed,
    CaseVerdict::Timeout,
    CaseVerdict::Error,
    CaseVerdict::Drift,
    CaseVerdict::Stale,
    CaseVerdict::NonStrict,
    CaseVerdict::ExpectedFail,
    CaseVerdict::Unsupported,
    CaseVerdict::Pass,
];

/// Escapes text for HTML and SVG, in text and in quoted attributes. Control characters
/// other than newline and tab become U+FFFD: they are not allowed in XML, and an SVG
/// saved from the page must still parse.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Collects the judged cases and writes the page at the end of the run.
pub struct HtmlReporter {
    path: PathBuf,
    cases: Vec<CaseReport>,
}

impl HtmlReporter {
    /// Writes to `path`.
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            cases: Vec::new(),
        }
    }
}

impl Reporter for HtmlReporter {
    fn event(&mut self, event: &RunEvent) -> io::Result<()> {
        match event {
            RunEvent::CaseJudged(report) => self.cases.push((**report).clone()),
            RunEvent::RunFinished {
                controller,
                elapsed,
                ..
            } => {
                let mut cases = std::mem::take(&mut self.cases);
                cases.sort_by(CaseReport::order);
                let page = run_page(&RunPage {
                    controller,
                    version: env!("CARGO_PKG_VERSION"),
                    elapsed: Some(*elapsed),
                    cases: &cases,
                    transcripts: true,
                    note: None,
                });
                write(&self.path, &page)?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// Writes a page atomically, naming the file in the error.
pub fn write(path: &std::path::Path, page: &str) -> io::Result<()> {
    super::write_file("HTML report", path, page.as_bytes())
}

/// What the page of one run shows.
pub struct RunPage<'a> {
    /// The controller's name.
    pub controller: &'a str,
    /// The loopcheck version that judged it.
    pub version: &'a str,
    /// The run's wall time (unknown for merged shards).
    pub elapsed: Option<Duration>,
    /// The case runs, in plan order.
    pub cases: &'a [CaseReport],
    /// Whether the cases hold their transcripts (reports read back from JSON do not).
    pub transcripts: bool,
    /// A note shown under the summary.
    pub note: Option<String>,
}

/// The area of a case id: what comes before the first `/`.
fn area(id: &str) -> &str {
    id.split('/').next().unwrap_or(id)
}

/// An HTML id for a case run.
fn anchor(case: &CaseReport) -> String {
    let raw = format!("case-{}-{}", case.id, case.run_label());
    raw.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn did_not_hold(check: &CheckResult) -> bool {
    matches!(check.verdict, CheckVerdict::Fail | CheckVerdict::NonStrict)
}

/// The page of one run (or of merged shards).
pub fn run_page(page: &RunPage<'_>) -> String {
    let summary = Summary::of(page.cases);
    let mut body = String::new();
    // The controller's name can be a whole shell command: it goes in the details.
    body.push_str("<header><h1>loopcheck report</h1>");
    let duration = match page.elapsed {
        Some(elapsed) => format!("{:.1} s", elapsed.as_secs_f64()),
        None => format!(
            "unknown (the case runs took {:.1} s in all)",
            page.cases.iter().map(|c| c.duration_ms).sum::<u64>() as f64 / 1000.0
        ),
    };
    let _ = write!(
        body,
        "<dl class=\"meta\"><dt>controller</dt><dd>{}</dd><dt>loopcheck</dt><dd>{}</dd><dt>duration</dt><dd>{}</dd><dt>result</dt><dd>{}</dd></dl>",
        escape(page.controller),
        escape(page.version),
        escape(&duration),
        if summary.ok() {
            "<b class=\"ok\">the run passes</b>"
        } else {
            "<b class=\"bad\">the run fails</b>"
        }
    );
    body.push_str(&counts(page.cases.iter().map(|c| c.verdict)));
    if let Some(note) = &page.note {
        let _ = write!(body, "<p class=\"note\">{}</p>", escape(note));
    }
    body.push_str("</header>");
    let checks: BTreeSet<&str> = page
        .cases
        .iter()
        .flat_map(|c| c.checks.iter().filter(|c| did_not_hold(c)))
        .map(|c| c.id.as_str())
        .collect();
    body.push_str(&filters(
        page.cases.iter().map(|c| c.verdict),
        page.cases.iter().map(|c| area(&c.id)),
        &checks,
        false,
    ));
    body.push_str(&grouped_drift(page.cases));
    body.push_str("<main>");
    for case in page.cases {
        body.push_str(&case_section(case, page.transcripts));
    }
    body.push_str("</main>");
    shell(&format!("loopcheck: {}", page.controller), &body)
}

/// Each distinct drift change once: the case runs it drifted (links to them) and one
/// run's changes and diff as an example.
fn grouped_drift(cases: &[CaseReport]) -> String {
    let groups = drift_groups(cases);
    if groups.is_empty() {
        return String::new();
    }
    let anchors: BTreeMap<String, String> = cases.iter().map(|c| (c.run_id(), anchor(c))).collect();
    let mut out = format!(
        "<section class=\"drift-groups\"><h2>Drift, grouped</h2><p class=\"dim\">{} distinct change(s); each is shown once with the case runs it drifted.</p><ol>",
        groups.len()
    );
    for group in &groups {
        let runs: Vec<String> = group
            .runs
            .iter()
            .map(|run| match anchors.get(run) {
                Some(id) => format!("<a href=\"#{id}\">{}</a>", escape(run)),
                None => escape(run),
            })
            .collect();
        let _ = write!(
            out,
            "<li class=\"drift-group\"><code>{}</code><p>in {} (against {}): {}</p>",
            escape(&group.change),
            case_runs(group.runs.len()),
            group.against.theirs(),
            runs.join(", ")
        );
        let example = &group.example;
        let _ = write!(
            out,
            "<details><summary>example: {} against <code>{}</code></summary><ul class=\"changes\">",
            escape(&example.run),
            escape(&example.path.display().to_string())
        );
        for change in changes_once(&example.changes) {
            let _ = write!(out, "<li>{}</li>", escape(&change));
        }
        out.push_str("</ul>");
        if let Some(diff) = &example.diff {
            out.push_str(&unified_diff(diff));
        }
        out.push_str("</details></li>");
    }
    out.push_str("</ol></section>");
    out
}

/// The counts by verdict, each a link that filters on it.
fn counts(verdicts: impl Iterator<Item = CaseVerdict>) -> String {
    let verdicts: Vec<CaseVerdict> = verdicts.collect();
    let mut out = format!("<p class=\"counts\"><b>{} case run(s)</b>", verdicts.len());
    for verdict in VERDICTS {
        let n = verdicts.iter().filter(|v| **v == verdict).count();
        if n > 0 {
            let word = verdict.as_str();
            let _ = write!(
                out,
                " <a class=\"badge v-{word}\" href=\"#verdict={word}\">{n} {word}</a>"
            );
        }
    }
    out.push_str("</p>");
    out
}

/// The filter form: hidden until the script shows it, since it does nothing without.
fn filters<'a>(
    verdicts: impl Iterator<Item = CaseVerdict>,
    areas: impl Iterator<Item = &'a str>,
    checks: &BTreeSet<&str>,
    disagree: bool,
) -> String {
    let present: BTreeSet<&str> = verdicts.map(CaseVerdict::as_str).collect();
    let areas: BTreeSet<&str> = areas.collect();
    let mut out = String::from("<form id=\"filters\" hidden><fieldset><legend>verdict</legend>");
    for verdict in VERDICTS.iter().map(|v| v.as_str()) {
        if present.contains(verdict) {
            let _ = write!(
                out,
                "<label class=\"v-{verdict}\"><input type=\"checkbox\" name=\"verdict\" value=\"{verdict}\" checked> {verdict}</label> "
            );
        }
    }
    out.push_str("</fieldset><label>area <select id=\"area\"><option value=\"\">all</option>");
    for area in areas {
        let area = escape(area);
        let _ = write!(out, "<option value=\"{area}\">{area}</option>");
    }
    out.push_str("</select></label> <label>failing check <select id=\"check\"><option value=\"\">any</option>");
    for check in checks {
        let check = escape(check);
        let _ = write!(out, "<option value=\"{check}\">{check}</option>");
    }
    out.push_str("</select></label>");
    if disagree {
        out.push_str(
            " <label><input type=\"checkbox\" id=\"disagree\"> only where the controllers disagree</label>",
        );
    }
    out.push_str(" <span id=\"shown\"></span></form>");
    out
}

/// One case run: its verdict, checks, drift, output and diagram.
fn case_section(case: &CaseReport, transcripts: bool) -> String {
    let verdict = case.verdict.as_str();
    let mut failing: Vec<&CheckResult> = case.checks.iter().filter(|c| did_not_hold(c)).collect();
    // Failures of a MUST first, then SHOULDs.
    failing.sort_by_key(|c| c.verdict != CheckVerdict::Fail);
    let failing_ids: Vec<String> = failing.iter().map(|c| escape(&c.id)).collect();
    let open = !matches!(case.verdict, CaseVerdict::Pass | CaseVerdict::Unsupported);
    let mut out = String::new();
    let _ = write!(
        out,
        "<details class=\"case\" id=\"{}\" data-row data-verdicts=\"{verdict}\" data-area=\"{}\" data-checks=\"{}\"{}>",
        anchor(case),
        escape(area(&case.id)),
        failing_ids.join(" "),
        if open { " open" } else { "" }
    );
    let _ = write!(
        out,
        "<summary><span class=\"badge v-{verdict}\">{verdict}</span> <b>{}</b> [{}] <span class=\"dim\">{} ms</span> <span class=\"failing\">{}</span></summary>",
        escape(&case.id),
        case.run_label(),
        case.duration_ms,
        failing_ids.join(", ")
    );
    out.push_str("<div class=\"body\">");
    let _ = write!(
        out,
        "<p class=\"summary\">{} <span class=\"dim\">({})</span></p>",
        escape(case.summary.trim()),
        case.level.as_str()
    );
    if let Some(detail) = &case.detail {
        let _ = write!(out, "<p class=\"detail\">{}</p>", escape(detail));
    }
    if let Some(note) = &case.baseline {
        let _ = write!(out, "<p class=\"baseline\">baseline: {}</p>", escape(note));
    }
    if !failing.is_empty() {
        out.push_str("<h3>Failing checks</h3><ul class=\"checks\">");
        for check in &failing {
            out.push_str(&check_item(check));
        }
        out.push_str("</ul>");
    }
    let others: Vec<&CheckResult> = case.checks.iter().filter(|c| !did_not_hold(c)).collect();
    if !others.is_empty() {
        let _ = write!(
            out,
            "<details class=\"others\"><summary>{} other check(s)</summary><ul class=\"checks\">",
            others.len()
        );
        for check in others {
            out.push_str(&check_item(check));
        }
        out.push_str("</ul></details>");
    }
    for (comparison, against) in [
        (&case.snapshot, "its snapshot"),
        (&case.recording, "its recording"),
    ] {
        if let Some(comparison) = comparison {
            out.push_str(&comparison_block(comparison, against));
        }
    }
    if matches!(case.verdict, CaseVerdict::Crashed | CaseVerdict::Timeout)
        && let Some(process) = &case.transcript.process
    {
        let _ = write!(
            out,
            "<h3>Controller output</h3><p>exit code: {}</p>",
            process
                .exit_code
                .map_or("none (killed)".to_owned(), |c| c.to_string())
        );
        for (name, text) in [("stderr", &process.stderr), ("stdout", &process.stdout)] {
            if !text.trim().is_empty() {
                let _ = write!(
                    out,
                    "<p class=\"dim\">{name} (the end)</p><pre class=\"output\">{}</pre>",
                    escape(&tail(text))
                );
            }
        }
    }
    if case.verdict != CaseVerdict::Unsupported {
        out.push_str("<h3>Exchange</h3>");
        if transcripts {
            out.push_str("<p class=\"legend dim\">In transcript order; hover a step for its bodies. <b class=\"bad\">✗</b> named by a failing check (request number or call_id), <b class=\"bad\">!</b> rejected (status 400 or more); an orange answer is a fault the scenario injected.</p>");
            let _ = write!(
                out,
                "<div class=\"diagram\">{}</div>",
                sequence::diagram(&case.transcript, &case.checks)
            );
        } else {
            out.push_str(
                "<p class=\"note\">No diagram: merged JSON reports hold no transcripts.</p>",
            );
        }
    }
    out.push_str("</div></details>");
    out
}

fn check_item(check: &CheckResult) -> String {
    let verdict = check.verdict.as_str();
    let mut out = format!(
        "<li class=\"check\"><span class=\"badge v-{verdict}\">{verdict}</span> <code>{}</code> <span class=\"dim\">({})</span> {}",
        escape(&check.id),
        check.level.as_str(),
        escape(&check.message)
    );
    if !check.rule.is_empty() {
        let _ = write!(
            out,
            "<div class=\"rule\">rule: {}</div>",
            escape(&check.rule)
        );
    }
    if let Some(d) = &check.diff {
        out.push_str(&text_diff(&d.expected, &d.actual));
    }
    out.push_str("</li>");
    out
}

/// A line diff, expected (-) against actual (+).
fn text_diff(expected: &str, actual: &str) -> String {
    let mut out =
        String::from("<pre class=\"diff\"><span class=\"hdr\">--- expected\n+++ actual</span>\n");
    for change in TextDiff::from_lines(expected, actual).iter_all_changes() {
        let (class, sign) = match change.tag() {
            ChangeTag::Delete => ("del", '-'),
            ChangeTag::Insert => ("add", '+'),
            ChangeTag::Equal => ("eq", ' '),
        };
        let _ = writeln!(
            out,
            "<span class=\"{class}\">{sign}{}</span>",
            escape(change.value().trim_end_matches('\n'))
        );
    }
    out.push_str("</pre>");
    out
}

/// A snapshot or recording comparison: its status, each change and the diff.
fn comparison_block(comparison: &Comparison, against: &str) -> String {
    let status = match comparison.status {
        ComparisonStatus::Matched => format!("sent what {against} holds"),
        ComparisonStatus::Drifted => format!("differs from {against}"),
        ComparisonStatus::New => "had no snapshot: one was written for review".to_owned(),
        ComparisonStatus::Missing => "has no snapshot (a failure under CI)".to_owned(),
        ComparisonStatus::Updated => format!("written as {against}"),
        ComparisonStatus::Unreadable => format!("{against} cannot be read"),
    };
    let mut out = format!(
        "<h3>Drift</h3><p>what the controller sent {} <code>{}</code></p>",
        escape(&status),
        escape(&comparison.path.display().to_string())
    );
    if !comparison.changes.is_empty() {
        out.push_str("<ul class=\"changes\">");
        for change in &comparison.changes {
            let _ = write!(out, "<li>{}</li>", escape(change));
        }
        out.push_str("</ul>");
    }
    if let Some(diff) = &comparison.diff {
        out.push_str(&unified_diff(diff));
    }
    out
}

/// A unified diff, its lines coloured by their sign.
fn unified_diff(diff: &str) -> String {
    let mut out = String::from("<pre class=\"diff\">");
    for line in diff.lines() {
        let class = if line.starts_with("+++") || line.starts_with("---") || line.starts_with("@@")
        {
            "hdr"
        } else if line.starts_with('+') {
            "add"
        } else if line.starts_with('-') {
            "del"
        } else {
            "eq"
        };
        let _ = writeln!(out, "<span class=\"{class}\">{}</span>", escape(line));
    }
    out.push_str("</pre>");
    out
}

/// The end of a process's output, as the page shows it.
fn tail(text: &str) -> String {
    super::output_tail(text, STDERR_LINES, STDERR_TAIL)
}

/// The matrix page: a row per case run, a column per controller, a verdict per cell.
/// `rows` are `(label, cells)` as [`super::matrix::Matrix`] lays them out; `failing`
/// names the checks that did not hold per row and controller.
pub fn matrix_page(
    controllers: &[(String, Summary)],
    rows: &[(String, Vec<&'static str>)],
    failing: &[Vec<Vec<String>>],
) -> String {
    let mut body = String::from("<header><h1>loopcheck matrix</h1>");
    let _ = write!(
        body,
        "<dl class=\"meta\"><dt>loopcheck</dt><dd>{}</dd><dt>case runs</dt><dd>{}</dd><dt>controllers</dt><dd>{}</dd></dl>",
        env!("CARGO_PKG_VERSION"),
        rows.len(),
        controllers.len()
    );
    body.push_str("</header>");
    let verdict_of = |word: &str| VERDICTS.into_iter().find(|v| v.as_str() == word);
    let checks: BTreeSet<&str> = failing
        .iter()
        .flatten()
        .flatten()
        .map(String::as_str)
        .collect();
    body.push_str(&filters(
        rows.iter()
            .flat_map(|(_, cells)| cells.iter().filter_map(|c| verdict_of(c))),
        rows.iter().map(|(label, _)| area(label)),
        &checks,
        true,
    ));
    body.push_str("<main><table class=\"matrix\"><thead><tr><th>case [state]</th>");
    for (name, _) in controllers {
        let _ = write!(body, "<th>{}</th>", escape(name));
    }
    body.push_str("</tr></thead><tbody>");
    for (i, (label, cells)) in rows.iter().enumerate() {
        let distinct: BTreeSet<&str> = cells.iter().copied().collect();
        let row_checks: BTreeSet<&str> = failing
            .get(i)
            .into_iter()
            .flatten()
            .flatten()
            .map(String::as_str)
            .collect();
        let _ = write!(
            body,
            "<tr data-row data-verdicts=\"{}\" data-area=\"{}\" data-checks=\"{}\"{}><th>{}</th>",
            distinct.iter().copied().collect::<Vec<_>>().join(" "),
            escape(area(label)),
            escape(&row_checks.iter().copied().collect::<Vec<_>>().join(" ")),
            if distinct.len() > 1 {
                " data-disagree"
            } else {
                ""
            },
            escape(label)
        );
        for (j, cell) in cells.iter().enumerate() {
            let why = failing
                .get(i)
                .and_then(|row| row.get(j))
                .map(|ids| ids.join(", "))
                .unwrap_or_default();
            let _ = write!(
                body,
                "<td class=\"v-{cell}\" title=\"{}\">{cell}</td>",
                escape(&why)
            );
        }
        body.push_str("</tr>");
    }
    body.push_str("</tbody><tfoot><tr><th>passed</th>");
    for (_, summary) in controllers {
        let _ = write!(
            body,
            "<td title=\"{}\">{}/{}</td>",
            escape(&summary.line()),
            summary.passed,
            summary.cases
        );
    }
    body.push_str("</tr></tfoot></table></main>");
    shell("loopcheck matrix", &body)
}

/// The document around a page's body: the style, the error catcher first (so that a
/// script error anywhere is recorded on the page, where a headless browser's DOM dump
/// shows it), and the filter script last.
fn shell(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{}</title><style>{STYLE}</style><script>{CATCH}</script></head><body>{body}<script>{SCRIPT}</script></body></html>\n",
        escape(title)
    )
}

const STYLE: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 1.5em 3em;color:#1f2328}
h1{font-size:1.4em;margin:.8em 0 .3em}h3{font-size:1em;margin:1em 0 .3em}
[hidden]{display:none!important}
code,pre,.seq text{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:#f6f8fa;padding:.5em .7em;overflow:auto;max-height:30em;font-size:12px;white-space:pre-wrap;word-break:break-word}
.meta{display:grid;grid-template-columns:max-content auto;gap:0 1em;margin:0 0 .5em}.meta dt{color:#59636e}.meta dd{margin:0}
.ok{color:#1a7f37}.bad{color:#cf222e}.dim{color:#59636e}.note{color:#59636e;font-style:italic}
.badge{display:inline-block;padding:0 .5em;border-radius:1em;font-size:12px;font-weight:600;text-decoration:none;border:1px solid currentColor}
.v-pass{color:#1a7f37;background:#dafbe1}.v-fail{color:#cf222e;background:#ffebe9}.v-non-strict{color:#9a6700;background:#fff8c5}
.v-drift{color:#8250df;background:#fbefff}.v-unsupported,.v-info{color:#59636e;background:#f6f8fa}
.v-timeout,.v-crashed,.v-stale{color:#bc4c00;background:#fff1e5}.v-error{color:#a40e26;background:#ffebe9}.v-expected-fail{color:#0969da;background:#ddf4ff}
#filters{position:sticky;top:0;background:#fff;border-bottom:1px solid #d1d9e0;padding:.5em 0;z-index:1}
#filters fieldset{display:inline;border:0;padding:0;margin:0 1em 0 0}#filters legend{float:left;margin-right:.5em;color:#59636e}
#filters label.v-pass,#filters label[class^=v-]{background:none}
#shown{color:#59636e;margin-left:1em}
details.case{border:1px solid #d1d9e0;border-radius:6px;margin:.5em 0}
details.case>summary{padding:.4em .7em;cursor:pointer}
details.case[open]>summary{border-bottom:1px solid #d1d9e0;background:#f6f8fa}
details.case .body{padding:.2em 1em 1em}
.failing{color:#cf222e;font-family:ui-monospace,monospace;font-size:12px}
ul.checks{padding-left:1.2em}ul.checks li{margin:.3em 0}.rule{color:#59636e;font-size:13px}
.diff .add{color:#1a7f37;background:#dafbe1}.diff .del{color:#cf222e;background:#ffebe9}.diff .hdr{color:#59636e}
.diagram{overflow-x:auto}
.drift-groups h2{font-size:1.1em;margin:.8em 0 .3em}.drift-group{margin:.5em 0}.drift-group p{margin:.2em 0}
.seq text{font-size:12px;fill:#1f2328;paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
.seq rect.actor{fill:#ddf4ff;stroke:#0969da}.seq text.actor{font-weight:600}
.seq line.life{stroke:#afb8c1;stroke-dasharray:6 4}
.seq line.call{stroke:#1f2328}.seq polygon.call{fill:#1f2328}.seq line.reply{stroke:#59636e;stroke-dasharray:5 3}.seq polygon.reply{fill:#59636e}
.seq text.detail,.seq text.seqno{font-size:11px;fill:#59636e}
.seq .rejected line,.seq .rejected text.answer{stroke:#cf222e}.seq .rejected text.answer{fill:#cf222e;stroke:#fff}
.seq .rejected polygon{fill:#cf222e}.seq .fault line.reply{stroke:#bc4c00}.seq .fault polygon.reply{fill:#bc4c00}.seq .fault text.answer,.seq .cut text.answer{fill:#bc4c00}
.seq rect.band{fill:#fff1f0}.seq .named rect.band{fill:#ffebe9;stroke:#cf222e}
.seq .named text.seqno,.seq .rejected text.seqno{fill:#cf222e;font-weight:700}.seq .named line{stroke:#cf222e}.seq .named polygon{fill:#cf222e}
.seq text.ending{font-weight:600}.legend{font-size:12px;margin:.2em 0}
table.matrix{border-collapse:collapse;margin-top:.5em}.matrix th,.matrix td{border:1px solid #d1d9e0;padding:.2em .6em;text-align:left}
.matrix tbody th{font-weight:normal;font-family:ui-monospace,monospace;font-size:12px}.matrix thead th{position:sticky;top:3em;background:#f6f8fa}
"#;

/// Records script errors on the page: `data-js-errors` on `<body>` (or `<html>` before
/// the body exists), so that a DOM dump shows them.
const CATCH: &str = r#"
(function(){var errors=[];function note(m){errors.push(String(m));(document.body||document.documentElement).setAttribute('data-js-errors',errors.join(' | '));}
window.addEventListener('error',function(e){note(e.message||'error');});
var original=console.error;console.error=function(){note(Array.prototype.join.call(arguments,' '));return original.apply(console,arguments);};})();
"#;

/// The filters: by verdict, area, failing check (and disagreement, in the matrix); the
/// state lives in the URL's fragment (`#verdict=fail,crashed&area=state`), so that a link
/// opens the page filtered. Marks `<body data-js-ok="1">` once done.
const SCRIPT: &str = r#"
(function(){
var form=document.getElementById('filters');if(!form){return;}
var rows=Array.prototype.slice.call(document.querySelectorAll('[data-row]'));
var boxes=Array.prototype.slice.call(form.querySelectorAll('input[name=verdict]'));
var area=document.getElementById('area'),check=document.getElementById('check'),disagree=document.getElementById('disagree');
var shown=document.getElementById('shown');
function words(attr){return (attr||'').split(' ').filter(function(w){return w;});}
function apply(){
  var verdicts=boxes.filter(function(b){return b.checked;}).map(function(b){return b.value;});
  var n=0;
  rows.forEach(function(row){
    var ok=words(row.getAttribute('data-verdicts')).some(function(v){return verdicts.indexOf(v)>=0;})
      &&(!area.value||row.getAttribute('data-area')===area.value)
      &&(!check.value||words(row.getAttribute('data-checks')).indexOf(check.value)>=0)
      &&(!disagree||!disagree.checked||row.hasAttribute('data-disagree'));
    row.hidden=!ok;if(ok){n++;}
  });
  shown.textContent=n+' of '+rows.length+' shown';
  var state=[];
  if(verdicts.length<boxes.length){state.push('verdict='+verdicts.join(','));}
  if(area.value){state.push('area='+encodeURIComponent(area.value));}
  if(check.value){state.push('check='+encodeURIComponent(check.value));}
  if(disagree&&disagree.checked){state.push('disagree=1');}
  try{history.replaceState(null,'',state.length?'#'+state.join('&'):location.pathname+location.search);}catch(e){}
}
function load(){
  var state={};
  location.hash.replace(/^#/,'').split('&').forEach(function(kv){var i=kv.indexOf('=');if(i>0){state[kv.slice(0,i)]=decodeURIComponent(kv.slice(i+1));}});
  if('verdict' in state){var want=state.verdict.split(',');boxes.forEach(function(b){b.checked=want.indexOf(b.value)>=0;});}
  else{boxes.forEach(function(b){b.checked=true;});}
  area.value=state.area||'';check.value=state.check||'';
  if(disagree){disagree.checked=state.disagree==='1';}
  apply();
}
form.addEventListener('change',apply);
window.addEventListener('hashchange',load);
form.hidden=false;
load();
})();
document.body.setAttribute('data-js-ok','1');
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Level, StateMode};
    use crate::transcript::ProcessRecord;

    fn case(id: &str, verdict: CaseVerdict, checks: Vec<CheckResult>) -> CaseReport {
        CaseReport {
            summary: "a summary".into(),
            duration_ms: 7,
            ..CaseReport::judged(id, StateMode::PreviousResponseId, verdict, checks)
        }
    }

    fn check(id: &str, verdict: CheckVerdict, message: &str) -> CheckResult {
        CheckResult {
            id: id.into(),
            level: Level::Must,
            verdict,
            message: message.into(),
            rule: "report the final message".into(),
            diff: None,
        }
    }

    fn page(cases: &[CaseReport], transcripts: bool) -> String {
        run_page(&RunPage {
            controller: "ctl <x>",
            version: "0.1.0",
            elapsed: Some(Duration::from_millis(1500)),
            cases,
            transcripts,
            note: None,
        })
    }

    #[test]
    fn escaping_covers_markup_quotes_and_control_characters() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>\n\t\u{0}\u{7f}é"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;\n\t\u{FFFD}\u{FFFD}é"
        );
    }

    #[test]
    fn text_from_the_run_is_escaped_everywhere() {
        let nasty = "</summary><script>alert(1)</script>\"'";
        let mut bad = case(
            "a/<b>",
            CaseVerdict::Fail,
            vec![check("x/<y>", CheckVerdict::Fail, nasty)],
        );
        bad.summary = nasty.into();
        bad.detail = Some(nasty.into());
        bad.baseline = Some(nasty.into());
        bad.checks[0].diff = Some(crate::oracle::Diff {
            expected: nasty.into(),
            actual: "</pre>".into(),
        });
        let html = page(&[bad], true);
        // The page's own two scripts, and no other.
        assert_eq!(html.matches("<script>").count(), 2, "{html}");
        assert!(!html.contains("</summary><script>"));
        assert!(!html.contains("<b>\"") && !html.contains("x/<y>"));
        assert!(html.contains("&lt;/summary&gt;&lt;script&gt;alert(1)"));
        assert!(html.contains("<title>loopcheck: ctl &lt;x&gt;</title>"));
    }

    #[test]
    fn a_failing_case_shows_its_checks_failing_first_with_rule_and_diff() {
        let mut failing = case(
            "terminal/01-x",
            CaseVerdict::Fail,
            vec![
                check("a/held", CheckVerdict::Pass, "fine"),
                check("b/should", CheckVerdict::NonStrict, "missed a SHOULD"),
                check("c/must", CheckVerdict::Fail, "request 1 went wrong"),
            ],
        );
        failing.checks[2].diff = Some(crate::oracle::Diff {
            expected: "one\ntwo\n".into(),
            actual: "one\nthree\n".into(),
        });
        let html = page(
            &[
                failing,
                case("terminal/02-y", CaseVerdict::Pass, Vec::new()),
            ],
            true,
        );
        let must = html.find("<code>c/must</code>").unwrap();
        let should = html.find("<code>b/should</code>").unwrap();
        let held = html.find("<code>a/held</code>").unwrap();
        assert!(must < should && should < held, "{html}");
        assert!(html.contains("rule: report the final message"));
        assert!(html.contains("<span class=\"del\">-two</span>"), "{html}");
        assert!(html.contains("<span class=\"add\">+three</span>"), "{html}");
        assert!(
            html.contains(
                r#"data-verdicts="fail" data-area="terminal" data-checks="c/must b/should" open>"#
            ),
            "{html}"
        );
        // The passing case is there, closed.
        assert!(
            html.contains(r#"data-verdicts="pass" data-area="terminal" data-checks="">"#),
            "{html}"
        );
        assert!(html.contains(r##"<a class="badge v-fail" href="#verdict=fail">1 fail</a>"##));
        assert!(html.contains("<b class=\"bad\">the run fails</b>"));
        assert!(html.contains("<svg class=\"seq\""));
        assert!(html.contains("<option value=\"c/must\">c/must</option>"));
    }

    #[test]
    fn a_crash_shows_the_end_of_stderr_and_merged_reports_say_why_no_diagram() {
        let mut crashed = case("terminal/03-z", CaseVerdict::Crashed, Vec::new());
        crashed.transcript.process = Some(ProcessRecord {
            exit_code: Some(3),
            stdout: String::new(),
            stderr: (0..100).map(|i| format!("line {i}\n")).collect(),
            duration_ms: 5,
        });
        let html = page(std::slice::from_ref(&crashed), true);
        assert!(html.contains("exit code: 3"));
        assert_eq!(tail("short\n"), "short", "nothing cut, nothing said");
        assert!(
            html.contains("line 99") && !html.contains("line 39\n"),
            "{html}"
        );
        assert!(html.contains("bytes before]"));
        let merged = page(&[crashed], false);
        assert!(merged.contains("No diagram: merged JSON reports hold no transcripts."));
        assert!(!merged.contains("<svg"));
    }

    #[test]
    fn the_page_is_self_contained() {
        let html = page(&[case("a/1", CaseVerdict::Pass, Vec::new())], true);
        for external in ["http://", "https://", "<link", "src=", "@import", "url("] {
            // The SVG namespace is a name, not a fetch.
            let page = html.replace("http://www.w3.org/2000/svg", "");
            assert!(!page.contains(external), "{external} in the page");
        }
    }

    #[test]
    fn the_matrix_page_colours_each_cell_and_flags_disagreement() {
        let html = matrix_page(
            &[
                ("a".into(), Summary::default()),
                ("b".into(), Summary::default()),
            ],
            &[
                ("x/1 [stateless]".into(), vec!["pass", "fail"]),
                ("y/2 [stateless]".into(), vec!["pass", "pass"]),
            ],
            &[
                vec![vec![], vec!["terminal/outcome".into()]],
                vec![vec![], vec![]],
            ],
        );
        assert!(html.contains(r#"<tr data-row data-verdicts="fail pass" data-area="x" data-checks="terminal/outcome" data-disagree><th>x/1 [stateless]</th>"#), "{html}");
        assert!(html.contains(r#"<td class="v-fail" title="terminal/outcome">fail</td>"#));
        assert!(
            html.contains(r#"<tr data-row data-verdicts="pass" data-area="y" data-checks=""><th>"#)
        );
        assert!(html.contains("id=\"disagree\""));
    }
}
