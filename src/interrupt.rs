//! Ctrl-C and SIGTERM for the commands that run controllers (`run`, `record`, `replay`):
//! the first signal asks the command to stop cleanly (kill its controllers' process
//! groups, write what it has); a second one ends the process at once.

use std::io;

use tokio::signal::unix::{Signal, SignalKind, signal};

/// The exit code of a command stopped by a signal, as a shell reports one (128 + SIGINT).
pub const EXIT_CODE: u8 = 130;

/// Listens for SIGINT and SIGTERM from the moment it is made: a signal that arrives
/// before [`Interrupt::first`] is awaited is not lost.
pub struct Interrupt {
    int: Signal,
    term: Signal,
}

impl Interrupt {
    /// Starts listening. From now on the signals no longer end the process by
    /// themselves.
    pub fn listen() -> io::Result<Self> {
        Ok(Self {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    /// Resolves at the first SIGINT or SIGTERM. From then on the next one exits the
    /// process with [`EXIT_CODE`] at once: a user who presses Ctrl-C twice does not
    /// want to wait for the clean-up.
    pub async fn first(mut self) {
        self.next().await;
        tokio::spawn(async move {
            self.next().await;
            eprintln!("loopcheck: interrupted again: exiting at once");
            std::process::exit(i32::from(EXIT_CODE));
        });
    }

    async fn next(&mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
    }
}
