//! The `backoff` binary: parse, run, exit.

fn main() {
    backoff_cli::main_with_args(std::env::args_os().collect()).exit();
}
