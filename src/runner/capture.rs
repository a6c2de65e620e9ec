//! A controller's standard output or error, read as it comes and capped: the first and
//! the last `OUTPUT_CAP / 2` bytes are kept (the result line is the last line, so the
//! tail must survive a chatty controller). What was read is kept even when the pipe never
//! closes (a daemonized grandchild holds it).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinHandle;

/// Most bytes kept of each of stdout and stderr.
pub(super) const OUTPUT_CAP: usize = 1024 * 1024;

/// What was kept of a stream.
#[derive(Debug, Default)]
struct Capped {
    head: Vec<u8>,
    tail: Vec<u8>,
    dropped: usize,
}

impl Capped {
    fn push(&mut self, chunk: &[u8]) {
        let half = OUTPUT_CAP / 2;
        let into_head = chunk.len().min(half.saturating_sub(self.head.len()));
        self.head.extend_from_slice(&chunk[..into_head]);
        self.tail.extend_from_slice(&chunk[into_head..]);
        if self.tail.len() > half {
            let excess = self.tail.len() - half;
            self.tail.drain(..excess);
            self.dropped += excess;
        }
    }

    fn text(&self) -> Captured {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            text.push_str(&format!("\n[loopcheck: {} bytes not kept]\n", self.dropped));
        }
        text.push_str(&String::from_utf8_lossy(&self.tail));
        // The last line began in the bytes not kept when the kept tail holds no line
        // break before its end.
        let tail = String::from_utf8_lossy(&self.tail);
        let tail = tail.trim_end();
        let last_line_cut = self.dropped > 0 && !tail.is_empty() && !tail.contains('\n');
        Captured {
            text,
            last_line_cut,
        }
    }
}

/// A stream's text as kept.
#[derive(Debug, Default)]
pub(super) struct Captured {
    /// The kept bytes, with a note where some were dropped.
    pub text: String,
    /// The last line lost its beginning to the cap.
    pub last_line_cut: bool,
}

/// A stream being read in the background.
pub(super) struct Capture {
    kept: Arc<Mutex<Capped>>,
    reader: JoinHandle<()>,
}

impl Capture {
    /// Reads `source` until its end (nothing to read for `None`).
    pub fn start(source: Option<impl AsyncRead + Unpin + Send + 'static>) -> Self {
        let kept = Arc::new(Mutex::new(Capped::default()));
        let sink = kept.clone();
        let reader = tokio::spawn(async move {
            let Some(mut source) = source else {
                return;
            };
            let mut buffer = [0u8; 8192];
            while let Ok(n) = source.read(&mut buffer).await {
                if n == 0 {
                    break;
                }
                if let Ok(mut kept) = sink.lock() {
                    kept.push(&buffer[..n]);
                }
            }
        });
        Self { kept, reader }
    }

    /// Waits at most `within` for the stream's end; whether it ended.
    pub async fn ended(&mut self, within: Duration) -> bool {
        self.reader.is_finished() || tokio::time::timeout(within, &mut self.reader).await.is_ok()
    }

    /// What was read so far; the reading stops.
    pub fn take(self) -> Captured {
        self.reader.abort();
        self.kept.lock().map(|kept| kept.text()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_line_longer_than_the_kept_tail_is_known_to_be_cut() {
        let mut capped = Capped::default();
        capped.push(b"log\n");
        capped.push(
            format!(
                "{{\"status\": \"completed\", \"output_text\": \"{}\"}}\n",
                "x".repeat(OUTPUT_CAP)
            )
            .as_bytes(),
        );
        let captured = capped.text();
        assert!(captured.last_line_cut);
        assert!(captured.text.contains("bytes not kept"));

        let mut chatty = Capped::default();
        chatty.push("noise\n".repeat(OUTPUT_CAP / 4).as_bytes());
        chatty.push(b"{\"status\": \"failed\"}\n");
        let captured = chatty.text();
        assert!(
            !captured.last_line_cut,
            "a short last line survives the cap"
        );
        assert!(captured.text.ends_with("{\"status\": \"failed\"}\n"));
    }
}
