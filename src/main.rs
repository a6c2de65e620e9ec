//! The `loopcheck` binary.

/// mimalloc, not the system allocator: the fake server serves faster with it
/// (docs/benchmarks.md, "Speed code"); `LOOPCHECK_PLAIN_ALLOC=1` makes it the system allocator.
#[global_allocator]
static ALLOCATOR: loopcheck::allocator::Allocator = loopcheck::allocator::Allocator;

fn main() -> std::process::ExitCode {
    ALLOCATOR.keep_freed_memory();
    loopcheck::cli::main()
}
