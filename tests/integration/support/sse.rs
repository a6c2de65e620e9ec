//! The one SSE reader of the tests: a streamed answer read chunk by chunk, its events
//! parsed strictly (the exact frame the API sends) or leniently (as a client reads them).

use serde_json::Value;

/// A streamed answer read chunk by chunk, up to the end or a body error.
pub struct Streamed {
    pub status: u16,
    pub content_type: String,
    pub chunks: Vec<Vec<u8>>,
    pub error: Option<reqwest::Error>,
}

impl Streamed {
    /// Sends `request` and reads its body as it arrives, keeping the chunk boundaries.
    pub async fn read(request: reqwest::RequestBuilder) -> Self {
        let mut response = request.send().await.expect("the server answers");
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let mut chunks = Vec::new();
        let mut error = None;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => chunks.push(chunk.to_vec()),
                Ok(None) => break,
                Err(err) => {
                    error = Some(err);
                    break;
                }
            }
        }
        Self {
            status,
            content_type,
            chunks,
            error,
        }
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.chunks.concat()
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.bytes()).expect("the stream is UTF-8 once reassembled")
    }

    /// The events, parsed strictly.
    pub fn events(&self) -> Vec<Value> {
        parse_strict(&self.text())
    }
}

/// Parses an SSE body: every event exactly `event: T\ndata: JSON\n\n` with `type == T`,
/// the body ending with a whole event and no `[DONE]`.
pub fn parse_strict(text: &str) -> Vec<Value> {
    assert!(
        text.is_empty() || text.ends_with("\n\n"),
        "the body does not end with a complete event: {text:?}"
    );
    assert!(!text.contains("[DONE]"), "the stream sends [DONE]");
    text.split_terminator("\n\n")
        .map(|block| {
            let (event, data) = block
                .split_once('\n')
                .unwrap_or_else(|| panic!("not `event:` + `data:`: {block:?}"));
            let name = event
                .strip_prefix("event: ")
                .unwrap_or_else(|| panic!("no `event: ` line: {block:?}"));
            let data = data
                .strip_prefix("data: ")
                .unwrap_or_else(|| panic!("no `data: ` line: {block:?}"));
            assert!(!data.contains('\n'), "multi-line data: {block:?}");
            let value: Value = serde_json::from_str(data)
                .unwrap_or_else(|e| panic!("data not JSON ({e}): {data}"));
            assert_eq!(value["type"], name, "`type` differs from `event:`");
            value
        })
        .collect()
}

/// Takes the next whole event block (up to and with its blank line) off the front of
/// `buffer`, as a client does with bytes as they arrive.
pub fn next_block(buffer: &mut Vec<u8>) -> Option<String> {
    let end = buffer.windows(2).position(|w| w == b"\n\n")?;
    let block: Vec<u8> = buffer.drain(..end + 2).collect();
    Some(String::from_utf8_lossy(&block).into_owned())
}

/// One event's JSON from a block, read leniently: its `data:` lines joined; `None` when
/// they are not JSON.
pub fn data_event(block: &str) -> Option<Value> {
    let data: Vec<&str> = block
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim_start)
        .collect();
    serde_json::from_str(&data.join("\n")).ok()
}
