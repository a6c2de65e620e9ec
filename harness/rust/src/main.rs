//! The reference controller's command: run one case, print the result line last.

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let outcome = loopcheck_reference::run_from_env().await;
    println!("{}", loopcheck_reference::result_line(&outcome));
}
