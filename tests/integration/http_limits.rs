//! The HTTP front's limits, against clients that hold on: bodies announced but not sent,
//! headers that never end, a server out of descriptors. The servers run as
//! `loopcheck serve` processes where their memory or CPU time is measured, so
//! /proc/PID shows theirs alone.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use loopcheck::serve::ServeOptions;
use loopcheck::server::HttpLimits;

use crate::support::{self, ServeProcess};

/// `host:port` of `http://host:port`.
fn address(url: &str) -> &str {
    url.trim_start_matches("http://")
}

/// A field of /proc/PID/status in kB.
fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |dir| dir.count())
}

/// Lets this process (and the server it starts) hold `wanted` descriptors, as far as the
/// hard limit allows.
fn raise_fd_limit(wanted: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < wanted {
            limit.rlim_cur = wanted.min(limit.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// Reads what the server answers (or that it closed) within `wait`; `None` if it did
/// neither.
fn answer_within(stream: &mut TcpStream, wait: Duration) -> Option<String> {
    stream.set_read_timeout(Some(wait)).expect("read timeout");
    let mut buffer = [0u8; 512];
    match stream.read(&mut buffer) {
        Ok(read) => Some(String::from_utf8_lossy(&buffer[..read]).into_owned()),
        Err(err)
            if matches!(
                err.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            None
        }
        // Reset: closed.
        Err(_) => Some(String::new()),
    }
}

const CONNECTIONS: usize = 1_000;
const ANNOUNCED: &str = "67108864";

#[test]
fn a_thousand_announced_64_mib_bodies_of_one_byte_stay_under_200_mb() {
    raise_fd_limit(4 * CONNECTIONS as u64);
    let (server, url) = ServeProcess::start(&["serve"], None);
    let pid = server.pid();
    let before = status_kb(pid, "VmRSS:");
    let request = format!(
        "POST /loopcheck/sessions HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         content-length: {ANNOUNCED}\r\n\r\n{{",
        address(&url)
    );
    let mut held = Vec::with_capacity(CONNECTIONS);
    for n in 0..CONNECTIONS {
        let mut stream = TcpStream::connect(address(&url))
            .unwrap_or_else(|err| panic!("connection {n} to {url}: {err}"));
        stream.write_all(request.as_bytes()).expect("send");
        held.push(stream);
    }
    // Every connection accepted (descriptors are the server's sockets), then a moment for
    // it to read their headers and first byte.
    let deadline = Instant::now() + Duration::from_secs(60);
    while open_descriptors(pid) < CONNECTIONS && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        open_descriptors(pid) >= CONNECTIONS,
        "the server accepted {} of {CONNECTIONS} connections",
        open_descriptors(pid)
    );
    std::thread::sleep(Duration::from_secs(2));
    let (rss, peak) = (status_kb(pid, "VmRSS:"), status_kb(pid, "VmHWM:"));
    eprintln!(
        "serve RSS: {} MB before, {} MB with {CONNECTIONS} connections (peak {} MB)",
        before / 1024,
        rss / 1024,
        peak / 1024
    );
    assert!(
        peak < 200 * 1024,
        "the server's RSS peaked at {} MB (from {} MB) with {CONNECTIONS} bodies of one byte",
        peak / 1024,
        before / 1024
    );
    drop(held);
}

#[tokio::test]
async fn half_a_header_is_closed_after_the_timeout_and_a_huge_body_is_refused_unread() {
    let options = ServeOptions {
        http: HttpLimits {
            header_timeout: Duration::from_millis(300),
            ..HttpLimits::default()
        },
        ..ServeOptions::default()
    };
    let server = support::session_server(options).await;
    let url = server.url();
    let addr = address(&url).to_owned();
    tokio::task::spawn_blocking(move || {
        let mut slow = TcpStream::connect(&addr).expect("connect");
        slow.write_all(b"GET /loopcheck/cases HTTP/1.1\r\nhos")
            .expect("half a header");
        // Closed long before 20 s; without a timeout it stays open for good.
        let answer = answer_within(&mut slow, Duration::from_secs(20));
        assert!(answer.is_some(), "a half-sent header kept its connection open");

        let mut huge = TcpStream::connect(&addr).expect("connect");
        huge.write_all(
            format!("POST /loopcheck/sessions HTTP/1.1\r\nhost: {addr}\r\ncontent-length: 67108865\r\n\r\n{{")
                .as_bytes(),
        )
        .expect("send");
        let answer = answer_within(&mut huge, Duration::from_secs(20)).unwrap_or_default();
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer:?}");
        assert!(answer.contains("too large"), "{answer:?}");
    })
    .await
    .expect("the client thread");
    server.shutdown().await;
}

/// CPU time (user + system) of process `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // The fields after the command name, which is in parentheses.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let field = |n: usize| {
        fields
            .get(n)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of stat; 12 and 13 after the name.
    field(11) + field(12)
}

#[test]
fn a_server_out_of_descriptors_waits_instead_of_spinning() {
    let (mut server, url) = ServeProcess::start(&["serve", "--filter", "dispatch/*"], Some(64));
    let pid = server.pid();
    // More connections than the server has descriptors: `accept` fails for the rest.
    let held: Vec<TcpStream> = (0..100)
        .filter_map(|_| TcpStream::connect(address(&url)).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let start = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_ticks(pid) - start;
    assert!(
        matches!(server.child.try_wait(), Ok(None)),
        "the server ended; its CPU time says nothing"
    );
    eprintln!("serve out of descriptors: {used} ticks of CPU in 2 s");
    // 100 ticks a second: spinning takes most of 200; waiting takes almost none. A loaded
    // machine only gives the server less time, so this cannot fail for load.
    assert!(
        used < 50,
        "the server used {used} ticks of CPU in 2 s with its descriptors spent"
    );
    drop(held);
}
