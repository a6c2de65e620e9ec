//! Whether this run is a CI run: snapshots are then never written, and the console
//! does not suggest commands meant for a terminal.

/// True when the environment says this is a CI run (`CI` set to anything but `false`
/// or `0`, as insta reads it).
pub fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}
