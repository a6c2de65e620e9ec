//! When and how long to wait before resending a request, as the official SDKs do
//!.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

/// Retries after the first attempt: at most 3 attempts in all.
pub(crate) const MAX_RETRIES: u32 = 2;

/// The longest server-requested delay honoured; a longer one falls back to the backoff.
const MAX_RETRY_AFTER_SECS: f64 = 60.0;

/// Whether an error answer is worth resending: `x-should-retry` decides when present,
/// otherwise 408, 409, 429 and 5xx are retried.
pub(crate) fn should_retry(status: StatusCode, headers: &HeaderMap) -> bool {
    match header(headers, "x-should-retry") {
        Some("true") => true,
        Some("false") => false,
        _ => matches!(status.as_u16(), 408 | 409 | 429) || status.as_u16() >= 500,
    }
}

/// The wait before the next attempt, `retries` retries having been made already:
/// `retry-after-ms`, else `retry-after` (seconds), if in (0, 60] s; else the backoff.
pub(crate) fn delay(headers: &HeaderMap, retries: u32) -> Duration {
    match requested(headers) {
        Some(secs) if secs <= MAX_RETRY_AFTER_SECS => Duration::from_secs_f64(secs),
        _ => backoff(retries),
    }
}

/// The wait an answer asks for, in seconds: `retry-after-ms`, else `retry-after`, when
/// positive.
pub(crate) fn requested(headers: &HeaderMap) -> Option<f64> {
    let seconds = |name| header(headers, name)?.trim().parse::<f64>().ok();
    seconds("retry-after-ms")
        .map(|ms| ms / 1000.0)
        .or_else(|| seconds("retry-after"))
        .filter(|secs| *secs > 0.0)
}

/// The longest server-requested wait honoured, in seconds.
pub(crate) const fn max_retry_after_secs() -> f64 {
    MAX_RETRY_AFTER_SECS
}

/// The SDKs' exponential backoff, 0.5 s doubling up to 8 s, without the random jitter
/// (which only spreads many clients apart; this one is alone and stays deterministic).
pub(crate) fn backoff(retries: u32) -> Duration {
    Duration::from_secs_f64((0.5 * 2f64.powi(retries.min(8) as i32)).min(8.0))
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|&(name, value)| (name.parse().unwrap(), value.parse().unwrap()))
            .collect()
    }

    fn status(code: u16) -> StatusCode {
        StatusCode::from_u16(code).unwrap()
    }

    #[test]
    fn statuses_retried_like_the_sdks() {
        for code in [408, 409, 429, 500, 502, 503, 504] {
            assert!(should_retry(status(code), &HeaderMap::new()), "{code}");
        }
        for code in [400, 401, 403, 404, 422] {
            assert!(!should_retry(status(code), &HeaderMap::new()), "{code}");
        }
    }

    #[test]
    fn x_should_retry_overrides_the_status() {
        assert!(!should_retry(
            status(429),
            &headers(&[("x-should-retry", "false")])
        ));
        assert!(!should_retry(
            status(500),
            &headers(&[("x-should-retry", "false")])
        ));
        assert!(should_retry(
            status(400),
            &headers(&[("x-should-retry", "true")])
        ));
        // Anything else leaves the status rule in force.
        assert!(should_retry(
            status(503),
            &headers(&[("x-should-retry", "maybe")])
        ));
    }

    #[test]
    fn server_requested_delays() {
        let ms = Duration::from_millis;
        assert_eq!(delay(&headers(&[("retry-after-ms", "10")]), 0), ms(10));
        assert_eq!(delay(&headers(&[("retry-after", "1.5")]), 0), ms(1500));
        // retry-after-ms wins over retry-after.
        assert_eq!(
            delay(
                &headers(&[("retry-after-ms", "20"), ("retry-after", "3")]),
                0
            ),
            ms(20)
        );
        assert_eq!(delay(&headers(&[("retry-after", "60")]), 0), ms(60_000));
    }

    #[test]
    fn out_of_range_or_unparsable_delays_fall_back_to_the_backoff() {
        for pairs in [
            &[("retry-after", "0")][..],
            &[("retry-after", "61")],
            &[("retry-after-ms", "0")],
            &[("retry-after-ms", "-5")],
            &[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")],
            &[("retry-after", "NaN")],
            &[],
        ] {
            assert_eq!(delay(&headers(pairs), 1), backoff(1), "{pairs:?}");
        }
    }

    #[test]
    fn backoff_doubles_from_half_a_second_up_to_eight() {
        let secs: Vec<f64> = (0..7).map(|n| backoff(n).as_secs_f64()).collect();
        assert_eq!(secs, [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]);
        assert_eq!(backoff(u32::MAX), Duration::from_secs(8));
    }
}
