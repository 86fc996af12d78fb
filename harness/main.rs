use stackbench::app;
use stackbench::error::OutputError;
use std::process::ExitCode;

fn main() -> ExitCode {
    if let Some(status) = stackbench::init::supervise_if_pid1() {
        return ExitCode::from(status);
    }
    let result = app::run(std::env::args_os());
    // Whatever the run started and left behind (a library's daemon that forked away) ends with it.
    stackbench::process::kill_descendants();
    match result {
        Ok(code) => code,
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(app::EXIT_HARNESS)
        }
    }
}

/// A reader that went away (`stackbench scan | head`) is not a failure.
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    matches!(error.downcast_ref::<OutputError>(), Some(OutputError::Stdout(e)) if e.kind() == std::io::ErrorKind::BrokenPipe)
}
