//! The end of a controller's processes: its process group, killed when the case is over
//! or when whatever runs it is dropped (an interrupted run), and the processes that left
//! the group (a daemon started with `setsid`) but still hold its output pipes.

use std::os::fd::RawFd;

/// Kills a whole process group (a command and everything it started).
pub(crate) fn kill_group(group: Option<i32>) {
    if let Some(pgid) = group.filter(|&p| p > 0) {
        // SAFETY: killpg only sends a signal; a stale group id at worst names no process.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// A controller's process group and its output pipes. Dropping it kills them all, so a
/// case abandoned half-way (Ctrl-C aborts the run's tasks) leaves no process behind.
pub(super) struct ProcessGroup {
    pgid: Option<i32>,
    /// The pipes' identities (inode numbers), to find the processes that hold them.
    pipes: Vec<u64>,
}

impl ProcessGroup {
    /// The group led by `pid`, whose output goes to the pipes `fds` (loopcheck's ends).
    pub fn new(pid: Option<u32>, fds: &[RawFd]) -> Self {
        Self {
            pgid: pid.map(|pid| pid as i32),
            pipes: fds.iter().filter_map(|&fd| pipe_inode(fd)).collect(),
        }
    }

    /// Kills the group.
    pub fn kill(&self) {
        kill_group(self.pgid);
    }

    /// Kills the group, then every process still holding one of its pipes, with that
    /// process's own group: what a daemonized grandchild keeps open would otherwise
    /// hold the case's output (and the process) forever.
    pub fn kill_all(&self) {
        self.kill();
        if self.pipes.is_empty() {
            return;
        }
        // SAFETY: getpid and getpgrp only read this process's ids.
        let (me, my_group) = unsafe { (libc::getpid(), libc::getpgrp()) };
        for pid in holders(&self.pipes).into_iter().filter(|&pid| pid != me) {
            // SAFETY: getpgid reads an id; kill and killpg only send signals, and never to
            // loopcheck's own group.
            unsafe {
                let group = libc::getpgid(pid);
                if group > 0 && group != my_group {
                    libc::killpg(group, libc::SIGKILL);
                }
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }

    /// Done with it, killed already: its ids may name other processes from now on, so
    /// the drop must not kill again.
    pub fn disarm(&mut self) {
        self.pgid = None;
        self.pipes.clear();
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// The inode number of the pipe `fd` is an end of, if it is a pipe.
fn pipe_inode(fd: RawFd) -> Option<u64> {
    // SAFETY: fstat writes into the zeroed struct it is given; a bad fd is an error.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::fstat(fd, &mut stat) } == 0;
    (ok && stat.st_mode & libc::S_IFMT == libc::S_IFIFO).then_some(stat.st_ino as u64)
}

/// The processes with an open descriptor on one of `pipes`, found in `/proc` (Linux; an
/// empty list elsewhere, or for processes this user may not inspect).
fn holders(pipes: &[u64]) -> Vec<i32> {
    let names: Vec<String> = pipes.iter().map(|ino| format!("pipe:[{ino}]")).collect();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
                return false;
            };
            fds.flatten().any(|fd| {
                std::fs::read_link(fd.path())
                    .is_ok_and(|target| names.iter().any(|name| target.as_os_str() == &**name))
            })
        })
        .collect()
}
