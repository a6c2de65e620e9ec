//! The `loopcheck` binary.

/// mimalloc, not the system allocator: the fake server serves faster with it
/// (docs/benchmarks.md, "Speed code").
#[global_allocator]
static ALLOCATOR: loopcheck::allocator::Mimalloc = loopcheck::allocator::Mimalloc;

fn main() -> std::process::ExitCode {
    loopcheck::allocator::keep_freed_memory();
    loopcheck::cli::main()
}
