//! `loopcheck serve`: sessions of the cases on one fake server, for a test framework.

use crate::config;
use crate::expectations::Snapshots;
use crate::serve::{Limits, ServeOptions, SessionServer};

use super::args::ServeArgs;
use super::error::{CliError, exit};

pub(super) async fn serve(args: ServeArgs) -> Result<u8, CliError> {
    let cases = args.selection.cases()?;
    let count = cases.len();
    // Read as `run` reads them: the same redactions, the same folder checks and CI rule.
    let snapshots = match &args.snapshots {
        Some(dir) => {
            let redactions = config::snapshot_redactions(args.config.as_deref())?;
            Some(Snapshots::open(dir, args.update_snapshots, redactions)?)
        }
        None => None,
    };
    let options = ServeOptions {
        port: args.port,
        limits: Limits {
            idle: std::time::Duration::from_secs(args.session_idle),
            sessions: args.max_sessions,
            requests: args.max_requests,
            ..Limits::default()
        },
        seed: args.seed,
        http: crate::server::HttpLimits::default(),
        snapshots,
    };
    let server = SessionServer::start(cases, options)
        .await
        .map_err(|source| CliError::Listen {
            port: args.port,
            source,
        })?;
    // The first line names the URL, for the test helpers that start this command.
    println!("loopcheck serve: listening on {}", server.url());
    println!("{count} cases; create a session with POST /loopcheck/sessions; Ctrl-C stops");
    let _ = std::io::Write::flush(&mut std::io::stdout());
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = stdin_closed(), if args.stop_on_eof => {}
    }
    server.shutdown().await;
    Ok(exit::OK)
}

/// Resolves once standard input reaches its end (whatever is written to it is ignored).
/// Read on a plain thread: a blocking read in the runtime's pool would hold up its
/// shutdown.
async fn stdin_closed() {
    let (closed, on_close) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 256];
        let mut stdin = std::io::stdin().lock();
        while matches!(std::io::Read::read(&mut stdin, &mut buffer), Ok(n) if n > 0) {}
        let _ = closed.send(());
    });
    let _ = on_close.await;
}
