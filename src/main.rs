//! The `loopcheck` binary.

fn main() -> std::process::ExitCode {
    loopcheck::cli::main()
}
