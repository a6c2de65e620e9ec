//! The sessions of `loopcheck serve`: each one a case's fake API and tool backend, kept
//! apart from every other, with the limits that keep a long-running server's memory
//! bounded: a session expires after a while unused, its traffic is capped, and only so
//! many live at once. Each session's id and control token are random: a session can
//! neither find nor drive another.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::expectations::Snapshots;
use crate::report::CaseReport;
use crate::runner;
use crate::scenario::{Case, StateMode};
use crate::server::{Session, SessionOptions};
use crate::transcript::{ControllerResult, Transcript, Unfinished};

/// How far a server's sessions may grow.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A session unused this long is dropped.
    pub idle: Duration,
    /// Sessions alive at once; creating one more is refused.
    pub sessions: usize,
    /// Requests one session answers (API and tool backend together); a catalogue case
    /// needs a few dozen, so this only stops a loop that never ends.
    pub requests: usize,
    /// Request body bytes one session takes in, all requests together.
    pub body_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(600),
            sessions: 1_000,
            requests: 1_000,
            body_bytes: 64 * 1024 * 1024,
        }
    }
}

/// Why a session could not be found or used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionError {
    /// No session of this server ever had this id, or the token given is not its own
    /// (answered alike, so a token cannot probe for other sessions' ids).
    Unknown(String),
    /// A control route was asked without a token.
    NoToken,
    /// The session was deleted, or expired unused.
    Gone(String),
    /// Creating one more session would pass the limit.
    Full(usize),
    /// The session already has its result.
    ResultTwice(String),
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unknown(id) => write!(
                f,
                "no session `{id}` with this token was created on this server"
            ),
            Self::NoToken => f.write_str(
                "a session's control routes need its token: send `Authorization: Bearer \
                 TOKEN` with the `token` its creation answered",
            ),
            Self::Gone(id) => write!(
                f,
                "session `{id}` is gone: it was deleted, or expired after going unused \
                 (`loopcheck serve --session-idle`)"
            ),
            Self::Full(limit) => write!(
                f,
                "{limit} sessions are alive, the limit (`--max-sessions`): delete finished \
                 sessions or wait for idle ones to expire"
            ),
            Self::ResultTwice(id) => write!(f, "session `{id}` already has its result"),
        }
    }
}

/// One live session.
struct Entry {
    /// What the control routes must be sent.
    token: String,
    case: Arc<Case>,
    session: Arc<Session>,
    created: Instant,
    last_used: Instant,
    requests: usize,
    body_bytes: usize,
    /// Why the session stopped answering, once it passed a cap.
    overflow: Option<String>,
    result: Option<Result<ControllerResult, Unfinished>>,
    /// The snapshot's name in place of the case id, when the session's creation chose one.
    snapshot: Option<String>,
}

/// How many expired ids are remembered, to tell "expired" from "never existed".
const EXPIRED_MEMORY: usize = 4_096;

/// The live sessions of a server.
pub struct Registry {
    limits: Limits,
    seed: u64,
    /// The folder verdicts are held to, when the server keeps snapshots.
    snapshots: Option<Snapshots>,
    state: Mutex<RegistryState>,
}

#[derive(Default)]
struct RegistryState {
    live: HashMap<String, Entry>,
    expired: VecDeque<String>,
}

/// A session just created.
pub struct Created {
    /// Its id.
    pub id: String,
    /// What its control routes must be sent.
    pub token: String,
    /// The engine serving it.
    pub session: Arc<Session>,
}

/// What a request to a session's API may go on with.
pub enum Admission {
    /// Serve it with this engine.
    Serve(Arc<Session>),
    /// The session passed a cap; answer with this message.
    Refuse(String),
}

impl Registry {
    /// An empty registry; sessions generate from `seed` as a run's cases do.
    pub fn new(limits: Limits, seed: u64) -> Self {
        Self {
            limits,
            seed,
            snapshots: None,
            state: Mutex::new(RegistryState::default()),
        }
    }

    /// The same registry, holding every verdict to its snapshot in `snapshots`.
    pub fn with_snapshots(self, snapshots: Option<Snapshots>) -> Self {
        Self { snapshots, ..self }
    }

    /// The snapshot folder, when there is one.
    pub fn snapshots(&self) -> Option<&Snapshots> {
        self.snapshots.as_ref()
    }

    /// The limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    fn lock(&self) -> MutexGuard<'_, RegistryState> {
        // A panic while holding the lock leaves plain data behind; go on with it.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts a session of `case` in `state`; its snapshot is named `snapshot` (a path
    /// under the folder) instead of by the case id, when given.
    pub fn create(
        &self,
        case: Arc<Case>,
        state: StateMode,
        seed: Option<u64>,
        snapshot: Option<String>,
    ) -> Result<Created, SessionError> {
        let now = Instant::now();
        let mut registry = self.lock();
        self.expire(&mut registry, now);
        if registry.live.len() >= self.limits.sessions {
            return Err(SessionError::Full(self.limits.sessions));
        }
        // 24 letters and digits: 142 bits, so no id is guessed or met twice.
        let id = crate::secret::token(24);
        let token = crate::secret::token(32);
        let session = Arc::new(Session::with_options(
            Arc::new(case.scenario.clone()),
            state,
            SessionOptions {
                seed: seed.unwrap_or(self.seed),
                observer: None,
            },
        ));
        registry.live.insert(
            id.clone(),
            Entry {
                token: token.clone(),
                case,
                session: session.clone(),
                created: now,
                last_used: now,
                requests: 0,
                body_bytes: 0,
                overflow: None,
                result: None,
                snapshot,
            },
        );
        Ok(Created { id, token, session })
    }

    /// Counts a request of `body_bytes` to session `id` and says whether to serve it.
    pub fn admit(&self, id: &str, body_bytes: usize) -> Result<Admission, SessionError> {
        let limits = self.limits;
        self.with_entry(id, |entry| {
            if entry.overflow.is_none() {
                entry.requests += 1;
                entry.body_bytes += body_bytes;
                if entry.requests > limits.requests {
                    entry.overflow = Some(format!(
                        "the session received more than {} requests (`--max-requests`); \
                         it stopped answering, and its transcript keeps the first {}",
                        limits.requests, limits.requests
                    ));
                } else if entry.body_bytes > limits.body_bytes {
                    entry.overflow = Some(format!(
                        "the session's requests passed {} bytes of body together; it \
                         stopped answering there",
                        limits.body_bytes
                    ));
                }
            }
            match &entry.overflow {
                Some(why) => Admission::Refuse(why.clone()),
                None => Admission::Serve(entry.session.clone()),
            }
        })
    }

    /// Takes the controller's result (or why there is none) for session `id`.
    pub fn set_result(
        &self,
        id: &str,
        token: &str,
        result: Result<ControllerResult, Unfinished>,
    ) -> Result<(), SessionError> {
        self.with_control(id, token, |entry| match entry.result {
            Some(_) => Err(SessionError::ResultTwice(id.to_owned())),
            None => {
                entry.result = Some(result);
                Ok(())
            }
        })?
    }

    /// The oracle's verdict on session `id` as it stands: its transcript so far and the
    /// result it was given (none yet is judged as no result), held to its snapshot when
    /// the server keeps them, as a run holds a case run.
    pub fn verdict(&self, id: &str, token: &str) -> Result<CaseReport, SessionError> {
        let (case, session, created, overflow, result, snapshot) =
            self.with_control(id, token, |entry| {
                (
                    entry.case.clone(),
                    entry.session.clone(),
                    entry.created,
                    entry.overflow.clone(),
                    entry.result.clone(),
                    entry.snapshot.clone(),
                )
            })?;
        let state = session.state();
        if let Some(why) = overflow {
            let mut report = runner::error_report(&case, state, why);
            report.transcript = session.transcript();
            return Ok(report);
        }
        let result = result.unwrap_or_else(|| {
            Err(Unfinished::NoResult {
                why: "no result was posted to the session before its verdict was asked for"
                    .to_owned(),
            })
        });
        // Judged outside the registry's lock: other sessions go on meanwhile.
        let mut report = runner::finish(&case.scenario, state, &session, None, result, created);
        if let Some(snapshots) = &self.snapshots {
            let cut_by_clock = case.scenario.task.deadline_ms.is_some();
            snapshots.check_named(&mut report, snapshot.as_deref(), cut_by_clock);
        }
        Ok(report)
    }

    /// What session `id` has recorded so far.
    pub fn transcript(&self, id: &str, token: &str) -> Result<Transcript, SessionError> {
        let session = self.with_control(id, token, |entry| entry.session.clone())?;
        Ok(session.transcript())
    }

    /// Ends session `id`.
    pub fn delete(&self, id: &str, token: &str) -> Result<(), SessionError> {
        // Looked up first so a second delete says the session is gone.
        self.with_control(id, token, |_| ())?;
        let mut registry = self.lock();
        if registry.live.remove(id).is_some() {
            remember_expired(&mut registry, id.to_owned());
        }
        Ok(())
    }

    /// Sessions alive now.
    pub fn live(&self) -> usize {
        self.lock().live.len()
    }

    /// Drops the sessions unused for longer than the limit.
    pub fn expire_idle(&self) {
        let mut registry = self.lock();
        self.expire(&mut registry, Instant::now());
    }

    fn expire(&self, registry: &mut RegistryState, now: Instant) {
        let idle = self.limits.idle;
        let stale: Vec<String> = registry
            .live
            .iter()
            .filter(|(_, entry)| now.duration_since(entry.last_used) > idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in stale {
            registry.live.remove(&id);
            remember_expired(registry, id);
        }
    }

    /// Runs `f` on live session `id` if `token` is its own, marking it used.
    fn with_control<T>(
        &self,
        id: &str,
        token: &str,
        f: impl FnOnce(&mut Entry) -> T,
    ) -> Result<T, SessionError> {
        self.with_entry(id, |entry| {
            crate::secret::same(token, &entry.token)
                .then(|| f(entry))
                .ok_or_else(|| SessionError::Unknown(id.to_owned()))
        })?
    }

    /// Runs `f` on live session `id`, marking it used.
    fn with_entry<T>(&self, id: &str, f: impl FnOnce(&mut Entry) -> T) -> Result<T, SessionError> {
        let now = Instant::now();
        let mut registry = self.lock();
        let idle = self.limits.idle;
        let expired = match registry.live.get(id) {
            None if registry.expired.iter().any(|gone| gone == id) => {
                return Err(SessionError::Gone(id.to_owned()));
            }
            None => return Err(SessionError::Unknown(id.to_owned())),
            Some(entry) => now.duration_since(entry.last_used) > idle,
        };
        if expired {
            registry.live.remove(id);
            remember_expired(&mut registry, id.to_owned());
            return Err(SessionError::Gone(id.to_owned()));
        }
        let entry = registry
            .live
            .get_mut(id)
            .ok_or_else(|| SessionError::Unknown(id.to_owned()))?;
        entry.last_used = now;
        Ok(f(entry))
    }
}

fn remember_expired(registry: &mut RegistryState, id: String) {
    if registry.expired.len() == EXPIRED_MEMORY {
        registry.expired.pop_front();
    }
    registry.expired.push_back(id);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case() -> Arc<Case> {
        let cases = crate::scenario::catalogue().expect("the catalogue loads");
        Arc::new(cases.into_iter().next().expect("a case"))
    }

    fn limits() -> Limits {
        Limits {
            idle: Duration::from_secs(60),
            sessions: 2,
            requests: 3,
            body_bytes: 100,
        }
    }

    #[test]
    fn sessions_past_the_limit_are_refused_until_one_ends() {
        let registry = Registry::new(limits(), 0);
        let first = registry
            .create(case(), StateMode::Stateless, None, None)
            .unwrap();
        registry
            .create(case(), StateMode::Stateless, None, None)
            .unwrap();
        assert_eq!(
            registry
                .create(case(), StateMode::Stateless, None, None)
                .err(),
            Some(SessionError::Full(2))
        );
        registry.delete(&first.id, &first.token).unwrap();
        assert!(
            registry
                .create(case(), StateMode::Stateless, None, None)
                .is_ok()
        );
        assert_eq!(registry.live(), 2);
    }

    #[test]
    fn a_session_past_its_request_cap_stops_answering_and_says_why() {
        let registry = Registry::new(limits(), 0);
        let created = registry
            .create(case(), StateMode::Stateless, None, None)
            .unwrap();
        let id = created.id;
        for _ in 0..3 {
            assert!(matches!(
                registry.admit(&id, 1).unwrap(),
                Admission::Serve(_)
            ));
        }
        let Admission::Refuse(why) = registry.admit(&id, 1).unwrap() else {
            panic!("the fourth request is served");
        };
        assert!(why.contains("more than 3 requests"), "{why}");
        let report = registry.verdict(&id, &created.token).unwrap();
        assert_eq!(report.verdict, crate::oracle::CaseVerdict::Error);
        assert_eq!(report.detail.as_deref(), Some(why.as_str()));
    }

    #[test]
    fn a_session_past_its_byte_cap_stops_answering() {
        let registry = Registry::new(limits(), 0);
        let id = registry
            .create(case(), StateMode::Stateless, None, None)
            .unwrap()
            .id;
        assert!(matches!(
            registry.admit(&id, 101).unwrap(),
            Admission::Refuse(_)
        ));
    }

    #[test]
    fn idle_sessions_expire_and_their_ids_stay_unknown() {
        let registry = Registry::new(
            Limits {
                idle: Duration::ZERO,
                ..limits()
            },
            0,
        );
        let id = registry
            .create(case(), StateMode::Stateless, None, None)
            .unwrap()
            .id;
        std::thread::sleep(Duration::from_millis(2));
        registry.expire_idle();
        assert_eq!(registry.live(), 0);
        assert_eq!(
            registry.admit(&id, 0).err(),
            Some(SessionError::Gone(id.clone()))
        );
        assert_eq!(
            registry.admit("00000000-1", 0).err(),
            Some(SessionError::Unknown("00000000-1".to_owned()))
        );
    }

    fn no_result() -> Result<ControllerResult, Unfinished> {
        Err(Unfinished::NoResult {
            why: "test".to_owned(),
        })
    }

    #[test]
    fn a_second_result_is_refused() {
        let registry = Registry::new(limits(), 0);
        let Created { id, token, .. } = registry
            .create(case(), StateMode::Stateless, None, None)
            .unwrap();
        registry.set_result(&id, &token, no_result()).unwrap();
        assert_eq!(
            registry.set_result(&id, &token, no_result()),
            Err(SessionError::ResultTwice(id.clone()))
        );
    }

    #[test]
    fn a_sessions_token_opens_no_other_session() {
        let registry = Registry::new(limits(), 0);
        let a = registry
            .create(case(), StateMode::Stateless, None, None)
            .unwrap();
        let b = registry
            .create(case(), StateMode::Stateless, None, None)
            .unwrap();
        assert_ne!(a.id, b.id);
        assert_ne!(a.session.api_key(), b.session.api_key());
        let unknown = Err(SessionError::Unknown(b.id.clone()));
        assert_eq!(registry.set_result(&b.id, &a.token, no_result()), unknown);
        assert_eq!(registry.delete(&b.id, &a.token), unknown);
        assert_eq!(registry.delete(&b.id, ""), unknown);
        assert!(registry.transcript(&b.id, &a.token).is_err());
        assert!(registry.verdict(&b.id, &a.token).is_err());
        assert_eq!(registry.live(), 2);
        registry.set_result(&b.id, &b.token, no_result()).unwrap();
    }
}
