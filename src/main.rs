//! The `loopcheck` binary.

/// mimalloc, not the system allocator: the fake server serves faster with it (README,
/// "Benchmark").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    loopcheck::cli::main()
}
